"""The v10 coverage campaign, pre-registered (tag v10-preregistered; docs/uncertainty.md, "The
v10 campaign"): everything below was fixed before its first real run.

Phases, each resumable (a finished file is kept; `mtpsim run-real` resumes rounds):
 1. calibrate: experiments/heldout/v10/calibrate.toml, 272 requests (sized by power), 8
    interleaved rounds of fresh / share with the machine-speed probe around every block.
 2. fit: its traces -> OUT/calibration-bootstrap.json (32 bootstrap refits; carries the probe).
 3. predict: for each of the 12 configurations (6 inside the calibrated range, 6 outside),
    `--uncertainty 128` (unpaired) with that calibration -> OUT/predictions/NAME.json: quantiles
    of the levels (acceptance length, output throughput, median TPOT of each policy) and of the
    share - fresh deltas (timings in %, acceptance length absolute). Written before NAME runs.
 4. run: `mtpsim run-real` of each configuration (interleaved rounds, probe), OUT/NAME/real.
 5. score (mtpsim.uncertainty.scoring): predicted timing levels put on the run's machine by the
    probe (CPU seconds: the runs time the serving thread's CPU, clock = "cpu"): x (probe during
    the run / probe during the calibration); run noise: the SD of the rounds / sqrt(rounds)
    (timings) or a request bootstrap (acceptance); machine drift of levels: DRIFT_CPU, measured
    by benchmarks/probe_drift.py before the campaign (docs/data/probe-drift/drift.json), never
    from this campaign's misses; deltas paired within rounds. Baselines: leave-one-out mean,
    zero effect. -> OUT/score.json.

    python benchmarks/campaign_v10.py --out runs/v10 [--minutes 15] [--phase all]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXP = ROOT / "experiments" / "heldout" / "v10"
CONFIGS = tuple(sorted(p.stem for p in EXP.glob("*.toml") if p.stem != "calibrate"))
POLICIES = ("fresh", "share")
METRICS = ("spec_decode_acceptance_length", "output_throughput", "median_tpot_ms")
DRAWS, BOOTSTRAP, CAL_ROUNDS = 128, 32, 8
# engine time over probe time, relative SD, CPU clock, 20 probe/engine/probe triples on this VM
# under load 7-12 (docs/data/probe-drift/drift.json, measured before the campaign)
DRIFT_CPU = 0.059
QS = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)


def _cal_set(out: Path) -> list[str]:
    return ["--set", f"calibration.file={json.dumps(str(out.resolve() / 'calibration-bootstrap.json'))}"]


def mtpsim(args: list[str], deadline: float) -> bool:
    """Run `python -m mtpsim ARGS` until done or the deadline; True when it finished."""
    left = deadline - time.time()
    if left < 60:
        return False
    try:
        subprocess.run([sys.executable, "-m", "mtpsim", *args], check=True, timeout=left, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
        return True
    except subprocess.TimeoutExpired:
        return False


def calibrate(out: Path, deadline: float) -> bool:
    done = all((out / "calibrate" / f"{p}.json").is_file() for p in POLICIES)
    return done or mtpsim(["run-real", str(EXP / "calibrate.toml"), "--out", str(out / "calibrate"),
                           "--rounds", str(CAL_ROUNDS), *_cal_set(out)], deadline)


def fit(out: Path, deadline: float) -> bool:
    cal = out / "calibration-bootstrap.json"
    traces = [a for p in POLICIES for a in ("--trace", str(out / "calibrate" / f"{p}.trace.jsonl"))]
    return cal.is_file() or mtpsim(["simulate", str(EXP / "calibrate.toml"), *traces, "--save-calibration",
                                    str(cal), "--bootstrap", str(BOOTSTRAP), "--json"], deadline)


def predict(out: Path, name: str) -> dict:
    """The prediction of `name`, written once, before its real run."""
    path = out / "predictions" / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())
    import numpy as np

    from mtpsim.fileio import atomic_write_json
    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.run import propagate
    from mtpsim.uncertainty.summary import delta_values

    cal = str(out.resolve() / "calibration-bootstrap.json")
    run = propagate(str(EXP / f"{name}.toml"), [f"calibration.file={json.dumps(cal)}",
                                                 "uncertainty.paired=false"], DRAWS, default_workers())
    vals = run.values
    pred = {"config": name, "inside": not run.extrapolation.flagged,
            "extrapolation": list(run.extrapolation.notes), "draws": len(vals),
            "made_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "levels": {}, "deltas": {}}
    for p in POLICIES:
        pred["levels"][p] = {m: dict(zip(map(str, QS), np.quantile([v[p][m] for v in vals], QS).tolist(),
                                         strict=True)) for m in METRICS}
    pred["deltas"] = {m: dict(zip(map(str, QS), np.quantile(delta_values(vals, "share", "fresh", m), QS)
                                  .tolist(), strict=True)) for m in METRICS}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, pred)
    return pred


def real_run(out: Path, name: str, deadline: float) -> bool:
    real = out / name / "real"
    done = all((real / f"{p}.json").is_file() for p in POLICIES)
    return done or mtpsim(["run-real", str(EXP / f"{name}.toml"), "--out", str(real), *_cal_set(out)],
                          deadline)


def _probe_cpu(res) -> float | None:
    from mtpsim.probe import figure

    readings = [r["probe"][k] for r in res.extra.rounds or [] if r.get("probe")
                for k in ("before", "after")]
    return figure(readings, "cpu")


def _al_se(res, boot: int = 1000) -> float:
    import numpy as np

    d = np.array([q.num_drafts for q in res.requests], float)
    a = np.array([q.num_accepted_tokens for q in res.requests], float)
    idx = np.random.default_rng(0).integers(0, len(d), (boot, len(d)))
    return float(np.std(1 + a[idx].sum(1) / d[idx].sum(1), ddof=1))


def scored_deltas(name: str, pred: dict, res: dict) -> list:
    """A configuration's scored share - fresh deltas: acceptance length as the difference of the
    two runs (SE from each run's), timings as the mean of the paired per-round differences (SE
    over the rounds; none with fewer than two rounds). v10's rule, reused by v11-v14."""
    from mtpsim.paired import paired_delta
    from mtpsim.uncertainty.scoring import Scored

    out = []
    for m in METRICS:
        q = {float(k): v for k, v in pred["deltas"][m].items()}
        if m == "spec_decode_acceptance_length":
            real_d = float(res["share"].get(m)) - float(res["fresh"].get(m))
            se = math.hypot(_al_se(res["share"]), _al_se(res["fresh"]))
        else:
            pd = paired_delta(res["fresh"], res["share"], m)
            if pd is None or pd.n < 2:
                continue
            real_d = pd.mean
            se = statistics.stdev(pd.deltas_pct) / math.sqrt(pd.n)
        out.append(Scored(name, "share - fresh", m, real_d, q, se, 0.0, pred["inside"], delta=True))
    return out


def score(out: Path) -> dict:
    from mtpsim.calibration.schema import read_calibration
    from mtpsim.fileio import atomic_write_json
    from mtpsim.result import load_result
    from mtpsim.uncertainty.scoring import Scored, report

    cal = read_calibration(out / "calibration-bootstrap.json")
    p_cal = cal.machine.get("probe_cpu_s")
    values = []
    for name in CONFIGS:
        pred_path, real = out / "predictions" / f"{name}.json", out / name / "real"
        if not pred_path.is_file() or not all((real / f"{p}.json").is_file() for p in POLICIES):
            continue
        pred = json.loads(pred_path.read_text())
        res = {p: load_result(real / f"{p}.json") for p in POLICIES}
        probes = [x for x in (_probe_cpu(r) for r in res.values()) if x]
        s = (statistics.fmean(probes) / p_cal) if probes and p_cal else 1.0
        for p in POLICIES:
            rounds = res[p].extra.rounds or []
            for m in METRICS:
                q = {float(k): v for k, v in pred["levels"][p][m].items()}
                if m != "spec_decode_acceptance_length":  # the probe puts it on the run's machine
                    q = {k: (v / s if "throughput" in m else v * s) for k, v in q.items()}
                    xs = [r["metrics"][m] for r in rounds if m in r.get("metrics", {})]
                    se = statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
                    drift = DRIFT_CPU * q[0.5]
                else:
                    se, drift = _al_se(res[p]), 0.0
                values.append(Scored(name, p, m, float(res[p].get(m)), q, se, drift, pred["inside"],
                                     extra={"probe_scale": s}))
        values += scored_deltas(name, pred, res)
    rep = report(values)
    rep["configs_scored"] = sorted({v.config for v in values})
    rep["rows"] = [{"config": v.config, "what": v.what, "metric": v.metric, "real": v.real,
                    "median": v.median, "q05": v.quantiles[0.05], "q95": v.quantiles[0.95],
                    "measurement_se": v.measurement_se, "drift_sd": v.drift_sd, "inside": v.inside,
                    "testable": v.testable} for v in values]
    atomic_write_json(out / "score.json", rep)
    return rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "v10")
    ap.add_argument("--minutes", type=float, default=600.0, help="stop starting work after this long")
    ap.add_argument("--phase", choices=("all", "score"), default="all")
    args = ap.parse_args()
    deadline = time.time() + 60 * args.minutes
    out = args.out
    if args.phase == "all":
        if not (calibrate(out, deadline) and fit(out, deadline)):
            print("stopped during the calibration; rerun the same command to resume", flush=True)
            return
        for name in CONFIGS:
            predict(out, name)  # every prediction before any configuration's real run
        for name in CONFIGS:
            if not real_run(out, name, deadline):
                print(f"stopped at {name}; rerun the same command to resume", flush=True)
                break
    rep = score(out)
    print(json.dumps({k: v for k, v in rep.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
