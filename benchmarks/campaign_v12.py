"""The v12 coverage campaign, pre-registered (tag v12-preregistered; docs/uncertainty.md, "The
v12 campaign"): everything below was fixed before its first real run.

What changed from v11 (benchmarks/campaign_v11.py, whose prediction, scoring, judging and penalty
code this reuses unchanged): the calibration is interleaved with the test runs, as issue #20 item 6
asks. v10 and v11 ran their calibration first and every test after it, and in both the tests'
decode steps cost 0.55-0.87 of the calibration's price (post-hoc replays), under different
machine loads each time: a calibration measured at one time does not price steps measured at
another on this shared VM, whatever the probe says. Here the calibration is 12 slices of 24
requests, slice i run right before test configuration i, so calibration and tests see the same
hours of the machine. The predictions therefore come after the runs; they are computed from the
calibration slices and the specs only (`predict` reads no test result), and all 12 are written,
and their SHA-256 logged, before `score` reads any test result. The campaign's own session runs
at autogroup nice -10 (`/proc/self/autogroup`) from its start; the other engineers' commands run
at autogroup nice 19 (declared in their rules), so the machine is as quiet as it can be made.

Phases (resumable: a finished file is kept; an interrupted `run-real` resumes its rounds):
 1. run, interleaved, in this order: for i = 0..11, calibration slice i (experiments/heldout/v12/
    calibrate.toml at seed 121 + i, both policies in one round, fresh first on even i and share
    first on odd i, with the probe) -> OUT/calibrate/sNN; then test configuration CONFIGS[i] (its
    spec's rounds, A B / B A, probe) -> OUT/NAME/real.
 2. fit: every slice's traces -> OUT/calibration-bootstrap.json (32 bootstrap refits; carries the
    slices' probe figure).
 3. predict: `--uncertainty 128` (unpaired) per configuration with that calibration, simulating
    the spec's rounds -> OUT/predictions/NAME.json; OUT/predictions/manifest.json has their SHA-256.
 4. score: v11's (campaign_v11.scored_values / judge, v10's noise model: probe normalisation of
    predicted timing levels, run noise from rounds or a request bootstrap, machine drift 5.9 % from
    the probe series, deltas paired within rounds, untestable when the measurement SE exceeds half
    the predicted effect; baselines leave-one-out mean and zero effect) -> OUT/score.json, plus the
    share of real values above the predicted median per metric (reported; the criterion stays
    the pooled share, as in v11).
 5. penalty: v11's pre-registered per-event log score of each penalty form against zero penalty on
    the pooled `share` traces of the 6 inside configurations; the same rule -> OUT/penalty.json.
Clock rule: work not started by STOP_UTC is not started; configurations not run are reported as
not run, and the criteria are judged on those that ran (fewer slices also means a smaller fit).

    python benchmarks/campaign_v12.py --out runs/v12 [--phase all|score] [--dry]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v11 as v11  # noqa: E402  (v11's prediction, scoring and judging, unchanged)
from campaign_v10 import BOOTSTRAP, METRICS, POLICIES, mtpsim  # noqa: E402

EXP = ROOT / "experiments" / "heldout" / "v12"
# the registered order: slice i runs right before CONFIGS[i]; inside and outside alternate
CONFIGS = ("in-k4-ctx400-conc2", "out-k2-ctx1000-conc5", "in-k4-ctx900-conc6", "out-k3-top96-ctx800-conc3",
           "in-k4-ctx1200-conc3", "out-k5-ctx600-conc4", "in-k4-ctx1500-conc5", "out-k6-top48-ctx1200-conc2",
           "in-k4-ctx650-conc8", "out-k4-ctx2400-conc3", "in-k4-mixed-conc4", "out-k4-top32-ctx900-conc12")
SLICE_SEED = 121
STOP_UTC = datetime(2026, 12, 2, 9, 25, tzinfo=UTC)
DRY = ["--set", "workload.num_prompts=4", "--set", "workload.output_len=8"]  # --dry: the plumbing only


def _quiet() -> str:
    """Raise this session's scheduling weight (autogroup nice -10); what it got, for the log."""
    try:
        Path("/proc/self/autogroup").write_text("-10")
        return Path("/proc/self/autogroup").read_text().strip()
    except OSError as e:
        return f"autogroup unchanged ({e})"


def _log(out: Path, msg: str) -> None:
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {msg}"
    print(line, flush=True)
    with open(out / "campaign.log", "a") as f:
        f.write(line + "\n")


def run_slice(out: Path, i: int, dry: bool) -> bool:
    where = out / "calibrate" / f"s{i:02d}"
    if all((where / f"{p}.json").is_file() for p in POLICIES):
        return True
    order = POLICIES if i % 2 == 0 else POLICIES[::-1]
    return mtpsim(["run-real", str(EXP / "calibrate.toml"), "--out", str(where), "--rounds", "1",
                   "--seed", str(SLICE_SEED + i), *[a for p in order for a in ("-p", p)],
                   *(DRY if dry else [])], STOP_UTC.timestamp() + 3600)


def run_config(out: Path, name: str, dry: bool) -> bool:
    from mtpsim.spec import load_experiment

    real = out / name / "real"
    if all((real / f"{p}.json").is_file() for p in POLICIES):
        return True
    rounds = load_experiment(str(EXP / f"{name}.toml")).workload.rounds
    rounds = min(rounds, 2) if dry else rounds
    return mtpsim(["run-real", str(EXP / f"{name}.toml"), "--out", str(real), "--rounds", str(rounds),
                   *(DRY if dry else [])], STOP_UTC.timestamp() + 3600)


def fit(out: Path) -> bool:
    cal = out / "calibration-bootstrap.json"
    if cal.is_file():
        return True
    traces = [a for s in sorted((out / "calibrate").glob("s*")) for p in POLICIES
              if (s / f"{p}.json").is_file() for a in ("--trace", str(s / f"{p}.trace.jsonl"))]
    return bool(traces) and mtpsim(["simulate", str(EXP / "calibrate.toml"), *traces, "--save-calibration",
                                    str(cal), "--bootstrap", str(BOOTSTRAP), "--json"], time.time() + 3600)


def predict_all(out: Path, names: list[str], exp: Path = EXP, paired: bool = False) -> None:
    """Every prediction from the calibration and the specs alone, their hashes logged, before scoring
    (`exp`: the specs' folder, for v13's driver; `paired`: v18's paired predictions)."""
    from mtpsim.fileio import atomic_write_json

    digests = {}
    for name in names:
        v11.predict(out, name, exp, paired)
        digests[name] = hashlib.sha256((out / "predictions" / f"{name}.json").read_bytes()).hexdigest()
    atomic_write_json(out / "predictions" / "manifest.json", {"sha256": digests})
    _log(out, f"predictions written: {json.dumps(digests)}")


def score(out: Path, configs: tuple[str, ...] = CONFIGS) -> dict:
    from mtpsim.fileio import atomic_write_json
    from mtpsim.uncertainty.scoring import report

    ran = tuple(n for n in configs if (out / "predictions" / f"{n}.json").is_file())
    values = v11.scored_values(out, ran)
    rep = report(values)
    rep["configs_scored"] = sorted({v.config for v in values})
    rep["configs_not_run"] = [n for n in configs if n not in ran]
    rep["verdict"] = v11.judge(rep, values)
    rep["above_median_by_metric"] = {
        m: statistics.fmean(v.real > v.median for v in vs) if vs else None
        for m in METRICS for vs in [[v for v in values if not v.delta and v.metric == m]]}
    rep["rows"] = [{"config": v.config, "what": v.what, "metric": v.metric, "real": v.real,
                    "median": v.median, "q05": v.quantiles[0.05], "q95": v.quantiles[0.95],
                    "measurement_se": v.measurement_se, "drift_sd": v.drift_sd, "inside": v.inside,
                    "testable": v.testable, "probe_scale": v.extra.get("probe_scale")} for v in values]
    atomic_write_json(out / "score.json", rep)
    return rep


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "v12")
    ap.add_argument("--phase", choices=("all", "score"), default="all")
    ap.add_argument("--dry", action="store_true", help="4 requests of 8 tokens per run: the plumbing only")
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.dry:
        v11.DRAWS = 8  # v11.predict's draws (module global): the plumbing only
    if args.phase == "all":
        _log(out, f"start; {_quiet()}")
        ran = []
        for i, name in enumerate(CONFIGS):
            if time.time() > STOP_UTC.timestamp() and not args.dry:
                _log(out, f"clock rule: {name} and later not started")
                break
            if not run_slice(out, i, args.dry):
                _log(out, f"slice {i} did not finish; rerun to resume")
                return
            _log(out, f"calibration slice {i} done")
            if not run_config(out, name, args.dry):
                _log(out, f"{name} did not finish; rerun to resume")
                return
            _log(out, f"{name} done")
            ran.append(name)
        if not fit(out):
            _log(out, "fit failed")
            return
        predict_all(out, ran)
    rep = score(out)
    print(json.dumps({k: v for k, v in rep.items() if k != "rows"}, indent=1))
    pen = v11.penalty(out, CONFIGS)
    if pen is not None:
        print(json.dumps({"penalty": pen["verdict"], "events": pen["events"]}, indent=1))


if __name__ == "__main__":
    main()
