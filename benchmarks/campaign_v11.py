"""The v11 coverage campaign, pre-registered (tag v11-preregistered; docs/uncertainty.md, "The
v11 campaign"): everything below was fixed before its first real run.

What changed from v10 (benchmarks/campaign_v10.py, whose helpers this reuses unchanged): every
configuration states `workload.rounds`, the rounds `run-real` serves AND the predictions simulate
(each round a burst of its own from t = 0, pooled as mtpsim.rounds.pool pools the real rounds;
mtpsim/sim/rounds.py). v10 predicted the one stream and ran bursts.

Phases, each resumable (a finished file is kept; `mtpsim run-real` resumes rounds):
 1. calibrate: experiments/heldout/v11/calibrate.toml (v10's calibration configuration at seed
    111; 272 requests sized by power; 8 interleaved rounds of fresh / share with the probe).
 2. fit: its traces -> OUT/calibration-bootstrap.json (32 bootstrap refits; carries the probe).
    Fallback, decided by the clock alone: if phases 1-2 have not finished by CAL_CUTOFF_UTC, the
    calibration stops and v10's (docs/data/heldout-v10/calibration-bootstrap.json, measured
    before any v10 or v11 test configuration) is used; OUT/calibration-source.json says which.
 3. predict: for each of the 12 configurations (6 inside the calibrated range, 6 outside),
    `--uncertainty 128` (unpaired) with that calibration, simulating the spec's rounds ->
    OUT/predictions/NAME.json. All written before the first configuration runs.
 4. run: `mtpsim run-real` of each configuration (its spec's rounds, probe), OUT/NAME/real.
 5. score: as v10 (mtpsim.uncertainty.scoring; probe CPU-seconds normalisation of predicted
    timing levels; run noise = SD of rounds / sqrt(rounds) or a request bootstrap; machine drift
    DRIFT_CPU = 5.9 % from the probe series; deltas paired within rounds; baselines leave-one-out
    mean and zero effect), then `judge`: the pass criteria of issue #20 ("Must show") -> OUT/score.json.
 6. penalty: issue #20 item 8, a paired per-position log score of each acceptance-penalty form
    against zero penalty on the pooled `share` traces of the 6 inside configurations, scored with
    the campaign's calibration (benchmarks/penalty_log_score.py). Decision rule (`penalty_verdict`):
    a form wins only if its mean log-score difference per event over all positions has a request-
    bootstrap 95 % CI wholly above 0 (the highest mean among such forms); otherwise zero penalty
    wins. The default (acceptance.penalty) is whatever wins. -> OUT/penalty.json.

    python benchmarks/campaign_v11.py --out runs/v11 [--minutes 60] [--phase all|score]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_v10 import (  # noqa: E402  (v10's helpers, unchanged)
    BOOTSTRAP,
    CAL_ROUNDS,
    DRAWS,
    DRIFT_CPU,
    METRICS,
    POLICIES,
    QS,
    _al_se,
    _cal_set,
    _probe_cpu,
    mtpsim,
    scored_deltas,
)

EXP = ROOT / "experiments" / "heldout" / "v11"
CONFIGS = tuple(sorted(p.stem for p in EXP.glob("*.toml") if p.stem != "calibrate"))
V10_CALIBRATION = ROOT / "docs" / "data" / "heldout-v10" / "calibration-bootstrap.json"
CAL_CUTOFF_UTC = datetime(2026, 12, 2, 6, 10, tzinfo=UTC)
PENALTY_BOOT = 1000
# issue #20 "Must show", as scored
PASS_COVERAGE_90 = 0.75
ABOVE_MEDIAN = (0.35, 0.65)
MAX_HALF_WIDTH_PCT = {"spec_decode_acceptance_length": 3.0, "output_throughput": 12.0, "median_tpot_ms": 12.0}


def calibrate(out: Path, deadline: float) -> bool:
    """Phases 1-2 with the clock-only fallback to v10's calibration; True when a calibration is set."""
    cal, src = out / "calibration-bootstrap.json", out / "calibration-source.json"
    if cal.is_file():
        return True
    from mtpsim.fileio import atomic_write_json

    stop = min(deadline, CAL_CUTOFF_UTC.timestamp())
    done = all((out / "calibrate" / f"{p}.json").is_file() for p in POLICIES) or mtpsim(
        ["run-real", str(EXP / "calibrate.toml"), "--out", str(out / "calibrate"),
         "--rounds", str(CAL_ROUNDS), *_cal_set(out)], stop)
    traces = [a for p in POLICIES for a in ("--trace", str(out / "calibrate" / f"{p}.trace.jsonl"))]
    if done and mtpsim(["simulate", str(EXP / "calibrate.toml"), *traces, "--save-calibration", str(cal),
                        "--bootstrap", str(BOOTSTRAP), "--json"], stop):
        atomic_write_json(src, {"calibration": "v11 (experiments/heldout/v11/calibrate.toml, this campaign)"})
        return True
    if time.time() < CAL_CUTOFF_UTC.timestamp():
        return False  # stopped by --minutes: rerun to resume
    shutil.copyfile(V10_CALIBRATION, cal)
    atomic_write_json(src, {"calibration": "v10 (fallback: the v11 calibration had not finished by "
                            f"{CAL_CUTOFF_UTC.isoformat()})"})
    return True


def predict(out: Path, name: str, exp: Path = EXP, paired: bool = False) -> dict:
    """The prediction of `name`, written once, before its real run (the spec's rounds simulated).
    `paired` (v18 on): every policy of a draw on the draw's seed, as a real round serves the same
    prompts to both; v11-v17 registered unpaired (each policy its own seed)."""
    path = out / "predictions" / f"{name}.json"
    if path.is_file():
        return json.loads(path.read_text())
    import numpy as np

    from mtpsim.fileio import atomic_write_json
    from mtpsim.runs.executor import default_workers
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.run import propagate
    from mtpsim.uncertainty.summary import delta_values

    cal = str(out.resolve() / "calibration-bootstrap.json")
    spec = str(exp / f"{name}.toml")
    sets = [f"calibration.file={json.dumps(cal)}", f"uncertainty.paired={str(paired).lower()}"]
    run = propagate(spec, sets, DRAWS, default_workers())
    vals = run.values
    pred = {"config": name, "inside": not run.extrapolation.flagged,
            "rounds": load_experiment(spec).workload.rounds, **({"paired": True} if paired else {}),
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
    from mtpsim.spec import load_experiment

    real = out / name / "real"
    rounds = load_experiment(str(EXP / f"{name}.toml")).workload.rounds
    done = all((real / f"{p}.json").is_file() for p in POLICIES)
    return done or mtpsim(["run-real", str(EXP / f"{name}.toml"), "--out", str(real), "--rounds", str(rounds),
                           *_cal_set(out)], deadline)


def scored_values(out: Path, configs: tuple[str, ...] = CONFIGS) -> list:
    """v10's scoring (campaign_v10.score), over v11's configurations (or `configs`)."""
    from mtpsim.calibration.schema import read_calibration
    from mtpsim.result import load_result
    from mtpsim.uncertainty.scoring import Scored

    cal = read_calibration(out / "calibration-bootstrap.json")
    p_cal = cal.machine.get("probe_cpu_s")
    values = []
    for name in configs:
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
    return values


def half_widths(values: list) -> dict[str, float | None]:
    """Median half-width (% of the median) of the model's 90 % intervals of levels inside the range."""
    out: dict[str, float | None] = {}
    for m in METRICS:
        hw = [100 * (v.interval(0.9)[1] - v.interval(0.9)[0]) / 2 / abs(v.median)
              for v in values if v.inside and not v.delta and v.metric == m and v.median]
        out[m] = statistics.median(hw) if hw else None
    return out


def judge(rep: dict, values: list) -> dict:
    """Issue #20's "Must show" criteria on the scored values; `passed` only if every one holds."""
    allv, dl = rep.get("all", {}), rep.get("deltas", {})
    crit: dict[str, dict] = {}
    cov = allv.get("coverage", {}).get("model", {})
    crit["coverage_90_model_alone"] = {"value": cov.get("90"), "need": f">= {PASS_COVERAGE_90}",
                                       "ok": cov.get("90") is not None and cov["90"] >= PASS_COVERAGE_90}
    for L in ("50", "80", "95"):
        ci = allv.get("coverage_ci95", {}).get(L)
        crit[f"calibration_{L}"] = {"value": cov.get(L), "ci95": ci, "need": f"{int(L) / 100} inside the CI",
                                    "ok": ci is not None and ci[0] <= int(L) / 100 <= ci[1]}
    am = allv.get("above_median")
    crit["above_median"] = {"value": am, "need": f"in {ABOVE_MEDIAN}",
                            "ok": am is not None and ABOVE_MEDIAN[0] <= am <= ABOVE_MEDIAN[1]}
    iscore = rep.get("interval_score", {})
    m_lev, loo_lev = iscore.get("model", {}).get("levels"), iscore.get("loo_mean", {}).get("levels")
    crit["interval_score_levels"] = {"model": m_lev, "loo_mean": loo_lev,
                                     "need": "model < leave-one-out mean",
                                     "ok": m_lev is not None and loo_lev is not None and m_lev < loo_lev}
    m_d, loo_d = iscore.get("model", {}).get("deltas"), iscore.get("loo_mean", {}).get("deltas")
    z_d = iscore.get("zero_effect", {}).get("deltas")
    untestable = len(rep.get("untestable_deltas", []))
    if dl.get("n", 0) == 0:
        ok_d = untestable > 0  # every delta untestable: reported with its power figure
    else:
        ok_d = None not in (m_d, loo_d, z_d) and m_d < loo_d and m_d < z_d
    crit["interval_score_deltas"] = {"model": m_d, "loo_mean": loo_d, "zero_effect": z_d,
                                     "testable": dl.get("n", 0), "untestable": untestable,
                                     "need": "model < both baselines, or every delta untestable", "ok": ok_d}
    hw = half_widths(values)
    for m, lim in MAX_HALF_WIDTH_PCT.items():
        crit[f"half_width_inside_{m}"] = {"value_pct": hw.get(m), "need": f"<= {lim} %",
                                          "ok": hw.get(m) is not None and hw[m] <= lim}
    return {"passed": all(c["ok"] for c in crit.values()), "criteria": crit}


def score(out: Path) -> dict:
    from mtpsim.fileio import atomic_write_json
    from mtpsim.uncertainty.scoring import report

    values = scored_values(out)
    rep = report(values)
    rep["configs_scored"] = sorted({v.config for v in values})
    rep["verdict"] = judge(rep, values)
    rep["calibration_source"] = json.loads((out / "calibration-source.json").read_text()) if (
        out / "calibration-source.json").is_file() else None
    rep["rows"] = [{"config": v.config, "what": v.what, "metric": v.metric, "real": v.real,
                    "median": v.median, "q05": v.quantiles[0.05], "q95": v.quantiles[0.95],
                    "measurement_se": v.measurement_se, "drift_sd": v.drift_sd, "inside": v.inside,
                    "testable": v.testable, "probe_scale": v.extra.get("probe_scale")} for v in values]
    atomic_write_json(out / "score.json", rep)
    return rep


def penalty_verdict(res: dict) -> dict:
    """The pre-registered rule: a form wins only if its all-position CI lies wholly above 0."""
    beats = {f: v["all"]["mean"] for f, v in res["forms"].items() if v["all"]["ci95"][0] > 0}
    winner = max(beats, key=beats.__getitem__) if beats else "zero penalty"
    return {"winner": winner, "forms_beating_zero": sorted(beats),
            "rule": "a form wins only if its mean log-score difference per event (all positions) has a "
                    "request-bootstrap 95 % CI wholly above 0; the highest such mean; else zero penalty"}


def penalty(out: Path, configs: tuple[str, ...] = CONFIGS) -> dict | None:
    from penalty_log_score import compare

    from mtpsim.calibration.schema import read_calibration
    from mtpsim.fileio import atomic_write_json
    from mtpsim.trace import read_trace

    paths = [out / n / "real" / "share.trace.jsonl" for n in configs if n.startswith("in-")]
    paths = [p for p in paths if p.is_file()]
    if not paths:
        return None
    res = compare(read_calibration(out / "calibration-bootstrap.json"), [read_trace(p) for p in paths],
                  PENALTY_BOOT)
    res["traces"] = [str(p.relative_to(out)) for p in paths]
    res["verdict"] = penalty_verdict(res)
    atomic_write_json(out / "penalty.json", res)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "v11")
    ap.add_argument("--minutes", type=float, default=600.0, help="stop starting work after this long")
    ap.add_argument("--phase", choices=("all", "score"), default="all")
    args = ap.parse_args()
    deadline = time.time() + 60 * args.minutes
    out = args.out
    if args.phase == "all":
        if not calibrate(out, deadline):
            print("stopped during the calibration; rerun the same command to resume", flush=True)
            return
        for name in CONFIGS:
            predict(out, name)  # every prediction before any configuration's real run
        for name in CONFIGS:
            if not real_run(out, name, deadline):
                print(f"stopped at {name}; rerun the same command to resume", flush=True)
                break
            print(f"{time.strftime('%H:%M:%S', time.gmtime())} {name} done", flush=True)
    rep = score(out)
    print(json.dumps({k: v for k, v in rep.items() if k != "rows"}, indent=1))
    pen = penalty(out)
    if pen is not None:
        print(json.dumps({"penalty": pen["verdict"], "events": pen["events"]}, indent=1))


if __name__ == "__main__":
    main()
