"""Coverage of the 90 % intervals on the reference engine (CPU), from the calibration's traces only.

1. The calibration configuration's real traces (experiments/heldout/calibrate.toml; reused from
   `benchmarks/heldout_validation.py --out DIR` when DIR/calibrate holds them, else run here).
2. Refit them with B bootstrap refits -> DIR/calibration-bootstrap.json (the posterior).
3. For a repeat of the calibration configuration (new seed: inside the calibrated range), the
   four held-out configurations and two beyond the calibrated k and context
   (experiments/heldout/k5-long-conc2.toml, k6-xlong-conc1.toml): `--uncertainty N` with that
   file, and the real run (reused when DIR/<config>/real holds it, else run here, ROUNDS
   core-swapped rounds as heldout_validation does).
4. Report: the share of values covered (acceptance length, output throughput, median TPOT of
   both policies and their share-vs-fresh deltas; target >= 80 %), the interval score and the
   median half-widths (inside the range: <= 3 % acceptance length, <= 12 % throughput and TPOT).
   Twice: the model's intervals as they are, and as predictions of one real measurement (each
   widened by the real figure's own standard error, from the spread of its core-swapped rounds;
   acceptance is the same in every round, so its rows are unchanged).

Run: python benchmarks/uncertainty_coverage.py [--out runs/heldout] [--draws 32] [--bootstrap 32]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from heldout_validation import EXPERIMENTS, HELD_OUT, POLICIES, ROUNDS, machine, mtpsim, run_real  # noqa: E402

OUT_OF_RANGE = ("k5-long-conc2", "k6-xlong-conc1")
REPEAT_SEED = 12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "heldout")
    ap.add_argument("--draws", type=int, default=32)
    ap.add_argument("--bootstrap", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--weights", default="builtin")
    ap.add_argument("--only", nargs="*", default=None, help="configurations (default: all)")
    args = ap.parse_args()
    from mtpsim.result import load_result
    from mtpsim.sweep import default_jobs
    from mtpsim.uncertainty.coverage import report, score_run, with_run_noise
    from mtpsim.uncertainty.run import propagate

    out = args.out.resolve()
    weights = ["--set", f"reference.weights={json.dumps(args.weights)}"]
    cal_dir = out / "calibrate"
    traces = [cal_dir / f"round-{r}" / f"{p}.trace.jsonl" for r in range(args.rounds) for p in POLICIES]
    if not all(t.is_file() for t in traces):
        run_real(str(EXPERIMENTS / "calibrate.toml"), cal_dir, weights, args.rounds)
    cal = out / "calibration-bootstrap.json"
    if not cal.is_file():
        mtpsim("simulate", str(EXPERIMENTS / "calibrate.toml"),
               *[a for t in traces for a in ("--trace", str(t))],
               "--save-calibration", str(cal), "--bootstrap", str(args.bootstrap), "--json",
               capture=True)
    configs = [("calibrate-repeat", "calibrate", [f"seed={REPEAT_SEED}"])]
    configs += [(n, n, []) for n in (*HELD_OUT, *OUT_OF_RANGE)]
    rows, noisy, runs = [], [], {}
    for name, toml_name, sets in configs:
        if args.only and name not in args.only:
            continue
        toml = str(EXPERIMENTS / f"{toml_name}.toml")
        real_dir = out / name / "real"
        if not all((real_dir / f"{p}.json").is_file() for p in POLICIES):
            extra = [a for s in sets for a in ("--set", s)]
            run_real(toml, real_dir, weights + extra, args.rounds)
        real = {p: load_result(real_dir / f"{p}.json").metrics for p in POLICIES}
        # unpaired: each policy its own seed, as in the real A/B run being scored
        run = propagate(toml, [f"calibration.file={json.dumps(str(cal))}", "uncertainty.paired=false",
                               *sets], args.draws,
                        args.jobs or default_jobs())
        inside = not run.extrapolation.flagged
        summary = run.summary()
        scored = score_run(name, summary, real, run.policies, inside, run.prob)
        rows += scored
        noisy += [with_run_noise(r, round_se(real_dir, r.what, r.metric, args.rounds)) for r in scored]
        runs[name] = {"extrapolation": list(run.extrapolation.notes), "inside": inside,
                      "uncertainty": {k: v for k, v in run.to_json().items() if k != "draws"}}
        print(f"{name}: {'inside' if inside else 'outside: ' + '; '.join(run.extrapolation.notes)}",
              flush=True)
    print(f"\nmachine: {machine()}")
    print(f"{'config':<18} {'what':<12} {'metric':<31} {'real':>10} {'median':>10} "
          f"{'90 % interval':>22} {'half-w':>8} {'score':>8}  covered")
    for r in rows:
        iv = r.interval
        print(f"{r.config:<18} {r.what:<12} {r.metric:<31} {r.real:>10.3f} {iv.median:>10.3f} "
              f"[{iv.lo:>9.3f}, {iv.hi:>9.3f}] {r.half_width_pct:>8.2f} {r.score:>8.2f}  "
              f"{'yes' if r.covered else 'NO'}")
    rep, rep_noise = report(rows), report(noisy)
    print(json.dumps(rep, indent=2))
    from mtpsim.fileio import atomic_write_json

    atomic_write_json(out / "coverage.json", {"machine": machine(), "report": rep, "configs": runs,
                                              "rows": [{"config": r.config, "what": r.what,
                                                        "metric": r.metric, "real": r.real,
                                                        **r.interval.to_json(),
                                                        "covered": r.covered, "score": r.score,
                                                        "inside": r.inside} for r in rows],
                                              "with_run_noise": {"report": rep_noise, "rows": [
                                                  {"config": r.config, "what": r.what, "metric": r.metric,
                                                   **r.interval.to_json(), "covered": r.covered,
                                                   "score": r.score} for r in noisy]}})
    print(f"as predictions of one real measurement (model interval + the run's own noise): "
          f"{rep_noise['covered']}/{rep_noise['values']} = {100 * rep_noise['fraction_covered']:.0f} %")
    print(f"\ncoverage: {rep['covered']}/{rep['values']} = {100 * rep['fraction_covered']:.0f} % "
          f"(target >= 80 %); {'PASS' if rep['pass'] else 'FAIL'}; written to {out / 'coverage.json'}")
    sys.exit(0 if rep["pass"] else 1)


def round_se(real_dir: Path, what: str, metric: str, rounds: int) -> float:
    """Standard error of the real figure (the mean of `rounds` core-swapped rounds) from their spread."""
    from statistics import stdev

    from mtpsim.result import load_result
    from mtpsim.uncertainty.coverage import real_delta

    if rounds < 2:
        return 0.0
    per_round = []
    for r in range(rounds):
        m = {p: load_result(real_dir / f"round-{r}" / f"{p}.json").metrics for p in POLICIES}
        if "-" in what:
            p, base = what.split("-", 1)
            per_round.append(real_delta(m, p, base, metric))
        else:
            per_round.append(float(m[what][metric]))
    return stdev(per_round) / rounds ** 0.5


if __name__ == "__main__":
    main()
