"""The v14 coverage campaign, pre-registered (docs/uncertainty.md, "The v14 campaign"): everything
below is fixed before its first real run (the commit is tagged v14-preregistered).

What changed from v13 (benchmarks/campaign_v13.py, whose design, prediction, judging and penalty
code this reuses), exactly the changes §17 declared:
 - 12 new test configurations (experiments/heldout/v14/), none run in v7-v13, and new seeds (slices
   201-212, configurations 1401-1412); the calibration is v13's four workload kinds unchanged;
 - every `run-real` reads the in-engine level probe densely (`--level-every 8`, §17);
 - the fit puts every calibration trace on the traces' median dense level before fitting
   (`normalise="level"`, mtpsim/calibration/normalise.py: the point fit, the 32 bootstrap refits and
   the leave-one-kind-out workload-shift measurement alike), so its predictions are on the scale of
   that unit (`machine.normalised.unit_s`, CPU seconds);
 - scoring meets a test run's timings with the prediction on that scale: each policy's measured
   median TPOT and output throughput are put on the unit's scale by the run's own dense level L
   (durations x unit / L, rates x L / unit; `mtpsim.level.scaled`), so the interval is for timings
   at the run's measured level and the level itself is not predicted; the machine probe's scaling
   of v10-v13 is not applied. The dense figure's own error, the log SD of the run's level readings
   over sqrt(their number) (LEVEL_SE_FALLBACK when a run has fewer than two), is added in quadrature
   to the value's measurement SE (the "+ run noise" and "+ machine drift" ways; the judged
   model-alone coverage, as in v13, has no noise term). Deltas, acceptance length, the criteria,
   the baselines and the penalty rule are v13's (= v12's = v11's) unchanged.

Phases (resumable: a finished file is kept; an interrupted `run-real` resumes its rounds):
 1. run, interleaved, in this order: for i = 0..11, calibration slice i (kind KINDS[i % 4], seed
    201 + i, both policies over the kind's rounds, fresh first on even i), then CONFIGS[i].
 2. fit (in-process, mtpsim.runs.simulate.fit, normalise="level", 32 bootstrap refits) ->
    OUT/calibration-bootstrap.json.
 3. predict: v13's (`--uncertainty 128`, unpaired, from the fit and the specs alone); SHA-256 of
    each in OUT/predictions/manifest.json and campaign.log before the score reads any test result.
 4. score -> OUT/score.json (v12's report and v11's judge on this module's scored values).
 5. penalty: v11's, on the inside configurations' share traces, the same rule -> OUT/penalty.json.
Clock rule: nothing starts later than RUN_MINUTES after the campaign's first start (OUT/started.json)
or after LAST_START_UTC, whichever is first; a run still going HARD_MINUTES after the first start
or at HARD_STOP_UTC is stopped and its configuration (or slice) reported as not run; the fit, the
predictions and the score then follow on what finished, and the criteria are judged on that.

    python benchmarks/campaign_v14.py --out runs/v14 [--phase all|score] [--dry]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v11 as v11  # noqa: E402  (v11's prediction, judging and penalty, unchanged)
import campaign_v12 as v12  # noqa: E402  (v12's hashes and log, unchanged)
from campaign_v10 import BOOTSTRAP, DRIFT_CPU, METRICS, POLICIES, _al_se, mtpsim, scored_deltas  # noqa: E402

EXP = ROOT / "experiments" / "heldout" / "v14"
# the registered order: slice i runs right before CONFIGS[i]; inside and outside alternate
CONFIGS = ("in-k4-ctx550-conc3", "out-k2-top48-ctx1100-conc3", "in-k4-ctx850-conc7",
           "out-k3-top80-ctx600-conc4", "in-k4-ctx1150-conc2", "out-k5-ctx1500-conc2",
           "in-k4-ctx1450-conc4", "out-k6-top96-ctx900-conc3", "in-k4-ctx1600-conc2",
           "out-k4-ctx2300-conc2", "in-k4-mixed-conc3", "out-k4-ctx800-conc12")
KINDS = ("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
         "calibrate-burst-ctx1700-conc2")
SLICE_SEED = 201
LEVEL_EVERY = 8
LEVEL_SE_FALLBACK = 0.03  # log SD of a run's dense level when its readings cannot give one
RUN_MINUTES, HARD_MINUTES = 45, 52  # v13's runs took 31 minutes at load ~1
LAST_START_UTC = datetime(2026, 12, 3, 7, 20, tzinfo=UTC)
HARD_STOP_UTC = datetime(2026, 12, 3, 7, 27, tzinfo=UTC)
DRY = v12.DRY


def kind_of(i: int) -> str:
    return KINDS[i % len(KINDS)]


def clock(out: Path) -> tuple[float, float]:
    """(last start, hard stop) of the clock rule, from the first start recorded once in OUT."""
    path = out / "started.json"
    if not path.is_file():
        path.write_text(json.dumps({"started_unix": time.time(),
                                    "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
    t0 = float(json.loads(path.read_text())["started_unix"])
    return (min(t0 + 60 * RUN_MINUTES, LAST_START_UTC.timestamp()),
            min(t0 + 60 * HARD_MINUTES, HARD_STOP_UTC.timestamp()))


def run_slice(out: Path, i: int, dry: bool, hard: float) -> bool:
    from mtpsim.spec import load_experiment

    where = out / "calibrate" / f"s{i:02d}"
    if all((where / f"{p}.json").is_file() for p in POLICIES):
        return True
    spec = EXP / f"{kind_of(i)}.toml"
    rounds = load_experiment(str(spec)).workload.rounds
    order = POLICIES if i % 2 == 0 else POLICIES[::-1]
    rounds = min(rounds, 2) if dry else rounds
    return mtpsim(["run-real", str(spec), "--out", str(where), "--rounds", str(rounds),
                   "--seed", str(SLICE_SEED + i), *[a for p in order for a in ("-p", p)],
                   "--level-every", str(LEVEL_EVERY), *(DRY if dry else [])], hard)


def run_config(out: Path, name: str, dry: bool, hard: float) -> bool:
    from mtpsim.spec import load_experiment

    real = out / name / "real"
    if all((real / f"{p}.json").is_file() for p in POLICIES):
        return True
    rounds = load_experiment(str(EXP / f"{name}.toml")).workload.rounds
    return mtpsim(["run-real", str(EXP / f"{name}.toml"), "--out", str(real), "--rounds",
                   str(min(rounds, 2) if dry else rounds), "--level-every", str(LEVEL_EVERY),
                   *(DRY if dry else [])], hard)


def slice_traces(out: Path) -> list[Path]:
    return [s / f"{p}.trace.jsonl" for s in sorted((out / "calibrate").glob("s*")) for p in POLICIES
            if all((s / f"{q}.json").is_file() for q in POLICIES)]


def fit(out: Path) -> bool:
    """The level-normalised calibration of every finished slice (kinds: the slices' experiment files)."""
    cal = out / "calibration-bootstrap.json"
    if cal.is_file():
        return True
    traces = slice_traces(out)
    if not traces:
        return False
    from mtpsim.runs.simulate import fit as fit_traces

    fit_traces(traces, BOOTSTRAP, cal, normalise="level")
    return True


def level_of(res) -> tuple[float | None, float]:
    """A run's dense level (CPU seconds, the record's weighted trimmed mean) and its log SE: the log
    SD of every level reading over sqrt(their number), LEVEL_SE_FALLBACK with fewer than two."""
    from mtpsim.level import figure, readings_of

    rec = res.extra.level
    xs = [float(x) for r in readings_of(rec) for x in r.get("cpus_s") or [] if x > 0]
    se = statistics.stdev(map(math.log, xs)) / math.sqrt(len(xs)) if len(xs) > 1 else LEVEL_SE_FALLBACK
    return figure(rec, "cpu"), se


def level_values(name: str, pred: dict, res: dict, unit: float) -> list:
    """The policies' levels: acceptance length as v13; timings put on the fit's unit by the run's level."""
    from mtpsim.level import scaled
    from mtpsim.uncertainty.scoring import Scored

    values = []
    for p in POLICIES:
        rounds = res[p].extra.rounds or []
        L, lse = level_of(res[p])
        for m in METRICS:
            q = {float(k): v for k, v in pred["levels"][p][m].items()}
            real = float(res[p].get(m))
            if m == "spec_decode_acceptance_length":
                values.append(Scored(name, p, m, real, q, _al_se(res[p]), 0.0, pred["inside"]))
                continue
            if not L:
                raise SystemExit(f"{name}/{p}: no level probe figure (run-real --level-every)")
            rate = "throughput" in m
            f = scaled(1.0, L, unit, rate=rate)  # the unit's scale over the measured one
            xs = [r["metrics"][m] for r in rounds if m in r.get("metrics", {})]
            se = f * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
            se = math.hypot(se, lse * real * f)
            values.append(Scored(name, p, m, real * f, q, se, DRIFT_CPU * q[0.5], pred["inside"],
                                 extra={"level_scale": f, "level_cpu_s": L, "level_log_se": lse,
                                        "raw": real}))
    return values


def scored_values(out: Path, configs: tuple[str, ...] = CONFIGS) -> list:
    """v13's scored values (campaign_v11.scored_values) with the levels' timings on the fit's unit."""
    from mtpsim.calibration.schema import read_calibration
    from mtpsim.result import load_result

    cal = read_calibration(out / "calibration-bootstrap.json")
    unit = float(cal.machine["normalised"]["unit_s"])
    values = []
    for name in configs:
        pred_path, real = out / "predictions" / f"{name}.json", out / name / "real"
        if not pred_path.is_file() or not all((real / f"{p}.json").is_file() for p in POLICIES):
            continue
        pred = json.loads(pred_path.read_text())
        res = {p: load_result(real / f"{p}.json") for p in POLICIES}
        values += level_values(name, pred, res, unit)
        values += scored_deltas(name, pred, res)  # the deltas: v13's, unchanged
    return values


def score(out: Path, configs: tuple[str, ...] = CONFIGS) -> dict:
    """v12's score (report, v11's judge, above-median by metric) on this module's scored values."""
    from mtpsim.fileio import atomic_write_json
    from mtpsim.uncertainty.scoring import report

    ran = tuple(n for n in configs if (out / "predictions" / f"{n}.json").is_file())
    values = scored_values(out, ran)
    rep = report(values)
    rep["configs_scored"] = sorted({v.config for v in values})
    rep["configs_not_run"] = [n for n in configs if n not in rep["configs_scored"]]
    rep["verdict"] = v11.judge(rep, values)
    rep["above_median_by_metric"] = {
        m: statistics.fmean(v.real > v.median for v in vs) if vs else None
        for m in METRICS for vs in [[v for v in values if not v.delta and v.metric == m]]}
    rep["half_widths_inside_pct"] = v11.half_widths(values)
    rep["rows"] = [{"config": v.config, "what": v.what, "metric": v.metric, "real": v.real,
                    "median": v.median, "q05": v.quantiles[0.05], "q95": v.quantiles[0.95],
                    "measurement_se": v.measurement_se, "drift_sd": v.drift_sd, "inside": v.inside,
                    "testable": v.testable, **{k: v.extra[k] for k in sorted(v.extra)}} for v in values]
    atomic_write_json(out / "score.json", rep)
    return rep


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_all(out: Path, dry: bool) -> list[str]:
    """Phase 1 under the clock rule: the configurations whose runs finished (with their slices)."""
    last, hard = clock(out)
    if dry:
        last = hard = time.time() + 3 * 3600  # the plumbing only: no clock
    ran: list[str] = []
    for i, name in enumerate(CONFIGS):
        if time.time() > last:
            v12._log(out, f"clock rule: slice {i} and {name} and later not started")
            break
        if not run_slice(out, i, dry, hard):
            v12._log(out, f"clock rule: slice {i} ({kind_of(i)}) stopped unfinished; "
                          f"{name} and later not run")
            break
        v12._log(out, f"calibration slice {i} ({kind_of(i)}) done; load {_load()}")
        if time.time() > last:
            v12._log(out, f"clock rule: {name} and later not started")
            break
        if not run_config(out, name, dry, hard):
            v12._log(out, f"clock rule: {name} stopped unfinished; not run")
            break
        v12._log(out, f"{name} done; load {_load()}")
        ran.append(name)
    return ran


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "v14")
    ap.add_argument("--phase", choices=("all", "score"), default="all")
    ap.add_argument("--dry", action="store_true", help="4 requests of 8 tokens per run: the plumbing only")
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.dry:
        v11.DRAWS = 8  # v11.predict's draws (module global): the plumbing only
    if args.phase == "all":
        # a dry run shares the machine with other work: only the campaign raises its priority
        v12._log(out, "start (dry: priority unchanged)" if args.dry
                 else f"start; {v12._quiet()}; load {_load()}")
        ran = run_all(out, args.dry)
        if not fit(out):
            v12._log(out, "fit failed: no finished slice")
            return
        cal = json.loads((out / "calibration-bootstrap.json").read_text())
        v12._log(out, f"normalised: unit_s {cal['machine']['normalised']['unit_s']}; "
                      f"workload shift: {json.dumps(cal.get('workload_shift'))}")
        v12.predict_all(out, ran, EXP)
    rep = score(out, CONFIGS)
    print(json.dumps({k: v for k, v in rep.items() if k != "rows"}, indent=1))
    pen = v11.penalty(out, CONFIGS)
    if pen is not None:
        print(json.dumps({"penalty": pen["verdict"], "events": pen["events"]}, indent=1))


if __name__ == "__main__":
    main()
