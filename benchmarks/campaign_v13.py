"""The v13 coverage campaign, pre-registered (docs/uncertainty.md, "The v13 campaign"): everything
below is fixed before its first real run (the coordinator tags the commit v13-preregistered).

What changed from v12 (benchmarks/campaign_v12.py, whose interleaving, prediction, scoring, judging
and penalty code this reuses unchanged): the calibration is built of four workload kinds, one
experiment file each (experiments/heldout/v13/calibrate-*.toml: v12's Poisson mixed-length stream
and equal-length bursts of 600 x 4, 1,200 x 8 and 1,700 x 2 prompt tokens x concurrency), so its
fit measures the step cost's workload-shift error by leaving each kind out (mtpsim/calibration/
shift.py), and every prediction carries that error as a lognormal factor on the step costs. v12
failed on calibration (90 % intervals covered 69 %, median TPOT 9 of 24): post hoc, its tests'
decode steps cost 0.75-1.20 of the price for batch shapes its one-kind calibration did not contain,
an error its bootstrap refits could not show. v13 tests whether the measured term makes the
intervals honest, with v12's configurations' kind of design and its criteria unchanged.

Phases (resumable: a finished file is kept; an interrupted `run-real` resumes its rounds):
 1. run, interleaved, in this order: for i = 0..11, calibration slice i (kind KINDS[i % 4], seed
    131 + i, both policies over that kind's rounds, fresh first on even i and share first on odd i,
    with the probe) -> OUT/calibrate/sNN; then test configuration CONFIGS[i] (its spec's rounds,
    A B / B A, probe) -> OUT/NAME/real.
 2. fit: every slice's traces -> OUT/calibration-bootstrap.json (32 bootstrap refits; the probe
    figure; `workload_shift` measured leave-one-kind-out over the kinds that ran; with fewer than
    two kinds that can be left out, the stated prior of mtpsim/calibration/shift.py, recorded so).
 3. predict: `--uncertainty 128` (unpaired) per configuration with that calibration, simulating the
    spec's rounds, the workload-shift factor drawn -> OUT/predictions/NAME.json; their SHA-256 in
    OUT/predictions/manifest.json and campaign.log before the score reads any test result.
 4. score: v12's (campaign_v12.score: v11's scored_values / judge, the same criteria) -> OUT/score.json.
 5. penalty: v11's per-event log score on the 6 inside configurations, the same rule -> OUT/penalty.json.
Clock rule: nothing starts later than RUN_MINUTES after the campaign's first start (OUT/started.json);
configurations not run are reported as not run and the criteria judged on those that ran.

    python benchmarks/campaign_v13.py --out runs/v13 [--phase all|score] [--dry]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v11 as v11  # noqa: E402  (v11's prediction, scoring, judging and penalty, unchanged)
import campaign_v12 as v12  # noqa: E402  (v12's interleaving, hashes, score; unchanged)
from campaign_v10 import BOOTSTRAP, POLICIES, mtpsim  # noqa: E402

EXP = ROOT / "experiments" / "heldout" / "v13"
# the registered order: slice i runs right before CONFIGS[i]; inside and outside alternate
CONFIGS = ("in-k4-ctx450-conc4", "out-k2-top80-ctx900-conc4", "in-k4-ctx800-conc2", "out-k3-ctx1400-conc2",
           "in-k4-ctx1050-conc6", "out-k5-top96-ctx700-conc3", "in-k4-ctx1350-conc3", "out-k6-ctx500-conc5",
           "in-k4-ctx1650-conc1", "out-k4-ctx2000-conc2", "in-k4-mixed-conc5", "out-k4-top128-ctx1000-conc10")
# the calibration's workload kinds (one experiment file each); slice i is of kind KINDS[i % 4]
KINDS = ("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
         "calibrate-burst-ctx1700-conc2")
SLICE_SEED = 131
RUN_MINUTES = 80  # v12 took 31 minutes for its runs; the rule only bounds a slow machine
DRY = v12.DRY


def kind_of(i: int) -> str:
    return KINDS[i % len(KINDS)]


def stop_time(out: Path) -> float:
    """The clock rule's deadline: RUN_MINUTES after the first start, recorded once in OUT."""
    path = out / "started.json"
    if not path.is_file():
        path.write_text(json.dumps({"started_unix": time.time(),
                                    "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
    return float(json.loads(path.read_text())["started_unix"]) + 60 * RUN_MINUTES


def run_slice(out: Path, i: int, dry: bool, deadline: float) -> bool:
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
                   *(DRY if dry else [])], deadline + 3600)


def run_config(out: Path, name: str, dry: bool, deadline: float) -> bool:
    from mtpsim.spec import load_experiment

    real = out / name / "real"
    if all((real / f"{p}.json").is_file() for p in POLICIES):
        return True
    rounds = load_experiment(str(EXP / f"{name}.toml")).workload.rounds
    return mtpsim(["run-real", str(EXP / f"{name}.toml"), "--out", str(real), "--rounds",
                   str(min(rounds, 2) if dry else rounds), *(DRY if dry else [])], deadline + 3600)


def fit(out: Path) -> bool:
    """The calibration of every slice that ran: its kinds are the slices' experiment files."""
    cal = out / "calibration-bootstrap.json"
    if cal.is_file():
        return True
    traces = [a for s in sorted((out / "calibrate").glob("s*")) for p in POLICIES
              if (s / f"{p}.json").is_file() for a in ("--trace", str(s / f"{p}.trace.jsonl"))]
    return bool(traces) and mtpsim(["simulate", str(EXP / f"{KINDS[0]}.toml"), *traces, "--save-calibration",
                                    str(cal), "--bootstrap", str(BOOTSTRAP), "--json"], time.time() + 3600)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "v13")
    ap.add_argument("--phase", choices=("all", "score"), default="all")
    ap.add_argument("--dry", action="store_true", help="4 requests of 8 tokens per run: the plumbing only")
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.dry:
        v11.DRAWS = 8  # v11.predict's draws (module global): the plumbing only
    if args.phase == "all":
        # a dry run shares the machine with other work: only the campaign raises its priority
        v12._log(out, "start (dry: priority unchanged)" if args.dry else f"start; {v12._quiet()}")
        deadline, ran = stop_time(out), []
        for i, name in enumerate(CONFIGS):
            if time.time() > deadline and not args.dry:
                v12._log(out, f"clock rule: {name} and later not started")
                break
            if not run_slice(out, i, args.dry, deadline):
                v12._log(out, f"slice {i} ({kind_of(i)}) did not finish; rerun to resume")
                return
            v12._log(out, f"calibration slice {i} ({kind_of(i)}) done")
            if not run_config(out, name, args.dry, deadline):
                v12._log(out, f"{name} did not finish; rerun to resume")
                return
            v12._log(out, f"{name} done")
            ran.append(name)
        if not fit(out):
            v12._log(out, "fit failed")
            return
        shift = json.loads((out / "calibration-bootstrap.json").read_text()).get("workload_shift")
        v12._log(out, f"workload shift: {json.dumps(shift)}")
        v12.predict_all(out, ran, EXP)
    rep = v12.score(out, CONFIGS)
    print(json.dumps({k: v for k, v in rep.items() if k != "rows"}, indent=1))
    pen = v11.penalty(out, CONFIGS)
    if pen is not None:
        print(json.dumps({"penalty": pen["verdict"], "events": pen["events"]}, indent=1))


if __name__ == "__main__":
    main()
