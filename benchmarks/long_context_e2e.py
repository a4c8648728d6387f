"""Long-context speed end to end: `share` vs `fresh` on the reference engine, predicted then measured.

For each configuration in experiments/long-context/ (1 K, 4 K, 8 K prompts; top-64, k = 4,
temperature 1.0, concurrency 1):
1. Predict it with the calibrated simulator: `--uncertainty DRAWS` with a calibration file that
   holds bootstrap refits (benchmarks/uncertainty_coverage.py writes one), unpaired as in the
   real A/B run. 4-8 K lie beyond the calibrated contexts (~0.3-1.9 K), so the extrapolation
   flag is raised and the interval widens; both are reported. Saved before the real run starts.
2. Run it for real: both policies side by side, one pinned to each core, ROUNDS rounds with the
   cores swapped, CPU clock (benchmarks/heldout_validation.py's run_real and merge_rounds).
3. Measured share-vs-fresh gains in output throughput and median TPOT (%), with request-level
   bootstrap 95 % CIs. A gain is significant when its CI excludes 0 and every round shows it
   with the same sign (the rule of heldout_validation's check). Throughput's CI resamples
   output tokens / end-to-end latency per request: at concurrency 1 the run is its requests
   back to back, so that ratio is the run's throughput.
4. Verdict per gain: where the measured gain is significant, the predicted median within
   +-20 % of it; where it is not, the predicted interval spanning 0 too ("cannot tell").
With --before, also `share` with the indexer keys still written at reused steps (the engine
before issue #11; benchmarks/run_real_eager_keys.py) beside `share`, same rounds and rules:
the faithful skip's own end-to-end effect.

Finished real runs and predictions are kept (a rerun resumes). Outputs: OUT/<config>/...,
OUT/summary.json. Run:
  python benchmarks/long_context_e2e.py --calibration runs/heldout/calibration-bootstrap.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from heldout_validation import POLICIES, machine, merge_rounds, run_real, side_by_side  # noqa: E402

EXPERIMENTS = ROOT / "experiments" / "long-context"
CONFIGS = ("ctx1k", "ctx4k", "ctx8k")
METRICS = ("output_throughput", "median_tpot_ms")
TOLERANCE = 0.20  # predicted gain within +-20 % of a significant measured gain
BOOT, LEVEL = 2000, 0.95


def predict(toml: str, out: Path, calibration: Path, sets: list[str], draws: int, jobs: int) -> dict:
    """The simulator's share-vs-fresh gains with intervals (kept in out/prediction.json; a
    prediction of other settings is redone only while no real run exists)."""
    from mtpsim.fileio import atomic_write_json
    from mtpsim.uncertainty.run import propagate

    path = out / "prediction.json"
    settings = {"calibration": str(calibration), "sets": sets, "draws": draws}
    if path.is_file():
        old = json.loads(path.read_text())
        if old["settings"] == settings or (out / "real").exists():
            return old
    print(f"predicting {toml} ({draws} draws)", flush=True)
    run = propagate(toml, [f"calibration.file={json.dumps(str(calibration))}",
                           "uncertainty.paired=false", *sets], draws, jobs)
    summary = run.summary()
    pred = {"settings": settings, "predicted_at": time.time(), "interval": run.prob,
            "extrapolation": {"flagged": run.extrapolation.flagged,
                              "distance": run.extrapolation.distance,
                              "notes": list(run.extrapolation.notes)},
            "discrepancy_sd": {"time": run.spread.time, "effect": run.spread.effect},
            "bootstrap_refits": run.replicates, "notes": run.notes,
            "levels": {p: {m: summary["metrics"][p][m].to_json() for m in METRICS} for p in POLICIES},
            "gains": {m: summary["deltas"]["share"][m].to_json() for m in METRICS}}
    atomic_write_json(path, pred)
    return pred


def _arrays(res) -> dict:
    import numpy as np

    reqs = res.requests or []
    return {"tokens": np.array([q.output_len for q in reqs], float),
            "e2el": np.array([q.e2el_s for q in reqs], float),
            "tpot": np.array([q.tpot_s if q.tpot_s is not None else np.nan for q in reqs], float)}


def _stat(metric: str, d: dict, idx):
    import numpy as np

    if metric == "output_throughput":
        return d["tokens"][idx].sum(-1) / d["e2el"][idx].sum(-1)
    return np.nanmedian(d["tpot"][idx], axis=-1)


def gain(base_path: Path, new_path: Path, metric: str, rounds: list[tuple[Path, Path]]) -> dict:
    """new vs base in % (point, request-level bootstrap CI, per-round gains, significance)."""
    import numpy as np

    from mtpsim.result import load_result

    a, b = load_result(base_path), load_result(new_path)
    da, db = _arrays(a), _arrays(b)
    rng = np.random.default_rng(0)
    ia = rng.integers(0, len(da["e2el"]), (BOOT, len(da["e2el"])))
    ib = rng.integers(0, len(db["e2el"]), (BOOT, len(db["e2el"])))
    boot = 100 * (_stat(metric, db, ib) / _stat(metric, da, ia) - 1)
    lo, hi = np.nanpercentile(boot, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    point = 100 * (b.metrics[metric] / a.metrics[metric] - 1)
    per_round = [100 * (load_result(nb).metrics[metric] / load_result(na).metrics[metric] - 1)
                 for na, nb in rounds]
    replicated = all(math.copysign(1, g) == math.copysign(1, point) and g != 0 for g in per_round)
    excludes0 = bool(lo > 0 or hi < 0)
    return {"metric": metric, "base": a.metrics[metric], "new": b.metrics[metric], "gain_pct": point,
            "ci": [float(lo), float(hi)], "rounds": per_round, "ci_excludes_0": excludes0,
            "significant": excludes0 and replicated}


def paired_decode_gain(base_path: Path, new_path: Path) -> dict:
    """Decode time (end-to-end latency minus TTFT, summed over requests) new vs base in %, with a
    bootstrap that resamples request ids and keeps each id's pair together: the same prompt and
    seed under both policies, so the prompt-to-prompt spread cancels. Not part of the verdict
    (the held-out check's rule is unpaired); it shows the decode effect without the prefill."""
    import numpy as np

    from mtpsim.result import load_result

    a, b = ({q.request_id: q.e2el_s - q.ttft_s for q in load_result(x).requests or []}
            for x in (base_path, new_path))
    ids = sorted(set(a) & set(b))
    da, db = np.array([a[i] for i in ids]), np.array([b[i] for i in ids])
    idx = np.random.default_rng(0).integers(0, len(ids), (BOOT, len(ids)))
    boot = 100 * (db[idx].sum(-1) / da[idx].sum(-1) - 1)
    lo, hi = np.percentile(boot, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return {"gain_pct": float(100 * (db.sum() / da.sum() - 1)), "ci": [float(lo), float(hi)],
            "requests": len(ids)}


def verdict(measured: dict, predicted: dict) -> tuple[bool, str]:
    """The must-show rule for one gain."""
    m, p = measured["gain_pct"], predicted["median"]
    if measured["significant"]:
        ratio = p / m
        ok = abs(ratio - 1) <= TOLERANCE
        return ok, (f"{'ok' if ok else 'FAIL'}: the prediction is {100 * ratio:.0f} % of the measured "
                    f"gain (needs {100 * (1 - TOLERANCE):.0f}-{100 * (1 + TOLERANCE):.0f} %)")
    if predicted["lo"] < 0 < predicted["hi"]:
        return True, "ok: both within noise (cannot tell)"
    why = "FAIL: the prediction excludes 0, the real gain is within noise"
    ci = measured.get("ci")
    if ci:  # the rule stands; say whether the run contradicts the prediction or cannot resolve it
        why += ("; the predicted gain lies inside the real 95 % CI (the run cannot resolve it)"
                if ci[0] <= p <= ci[1] else "; the predicted gain lies outside the real 95 % CI")
    return False, why


def run_before(toml: str, out: Path, extra: list[str], rounds: int) -> str:
    """`share` before the faithful skip (run_real_eager_keys.py) beside `share`, one per core,
    cores swapped each round: out/round-R/{before,after}/share.json; rounds merged into
    out/{before,after}.json. Returns the load average."""
    variants = {"after": [sys.executable, "-m", "mtpsim"],
                "before": [sys.executable, str(ROOT / "benchmarks" / "run_real_eager_keys.py")]}
    for r in range(rounds):
        side_by_side([[*cmd, "run-real", toml, "-p", "share", "--out", str(out / f"round-{r}" / name),
                       *extra] for name, cmd in variants.items()], r)
    for name in variants:
        merge_rounds([out / f"round-{r}" / name / "share.json" for r in range(rounds)],
                     out / f"{name}.json")
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def rounds_finished(real: Path, rounds: int) -> bool:
    return all((real / f"round-{r}" / f"{p}.json").is_file() for r in range(rounds) for p in POLICIES)


def run_load(real: Path, finished_before: bool, load_now: str) -> str:
    """The load average when the real rounds ran: measured now if this call ran any of them (and
    kept in real/load.txt), else the one kept then; a rerun that only resumes must not report
    the load of the moment as the run's."""
    from mtpsim.fileio import atomic_write_text

    kept = real / "load.txt"
    if not finished_before:
        atomic_write_text(kept, load_now)
        return load_now
    if kept.is_file():
        return kept.read_text().strip()
    return f"load when the rounds ran not recorded (resumed; now {load_now})"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # subprocess waits end; the children are terminated


def measure(name: str, args: argparse.Namespace, calibration: Path) -> dict:
    toml = str(EXPERIMENTS / f"{name}.toml")
    d = args.out / name
    sets = list(args.set)
    extra = ["--set", f"reference.weights={json.dumps(args.weights)}",
             *[a for s in sets for a in ("--set", s)]]
    pred = predict(toml, d, calibration, sets, args.draws, args.jobs)
    done = list((d / "real").glob("round-*/*.json"))  # a resumed run started with its first file
    real_started = min((f.stat().st_mtime for f in done), default=time.time())
    finished_before = rounds_finished(d / "real", args.rounds)
    load = run_load(d / "real", finished_before, run_real(toml, d / "real", extra, args.rounds))
    rounds = [(d / "real" / f"round-{r}" / "fresh.json", d / "real" / f"round-{r}" / "share.json")
              for r in range(args.rounds)]
    rows = []
    for m in METRICS:
        g = gain(d / "real" / "fresh.json", d / "real" / "share.json", m, rounds)
        ok, why = verdict(g, pred["gains"][m])
        p = pred["gains"][m]
        rows.append({**g, "predicted": p, "inside_predicted_interval": p["lo"] <= g["gain_pct"] <= p["hi"],
                     "ok": ok, "verdict": why})
    from mtpsim.result import load_result

    acc = {p: load_result(d / "real" / f"{p}.json").metrics["spec_decode_acceptance_length"]
           for p in POLICIES}
    res = {"config": name, "prediction": pred, "prediction_before_real": pred["predicted_at"] < real_started,
           "load": load, "acceptance_length": acc, "rows": rows,
           "paired_decode": paired_decode_gain(d / "real" / "fresh.json", d / "real" / "share.json")}
    if args.before:
        bload = run_before(toml, d / "before-after", extra, args.rounds)
        brounds = [(d / "before-after" / f"round-{r}" / "before" / "share.json",
                    d / "before-after" / f"round-{r}" / "after" / "share.json") for r in range(args.rounds)]
        res["before_after"] = {"load": bload, "rows": [
            gain(d / "before-after" / "before.json", d / "before-after" / "after.json", m, brounds)
            for m in METRICS]}
    return res


def report(results: list[dict]) -> None:
    print(f"\nmachine: {machine()}")
    for r in results:
        p = r["prediction"]
        ext = "; ".join(p["extrapolation"]["notes"]) or "inside the calibrated range"
        print(f"{r['config']}: after the real run {r['load']}; prediction "
              f"{'made before' if r['prediction_before_real'] else 'NOT made before'} the real run; "
              f"{p['bootstrap_refits']} bootstrap refits; extrapolation: {ext}")
    iv = int(round(100 * results[0]["prediction"]["interval"])) if results else 90
    print(f"\n{'config':<7} {'gain (share vs fresh)':<22} {'fresh':>9} {'share':>9} {'measured':>9} "
          f"{'95 % CI':>17} {'rounds':>17}  {'signif.':<7} {'predicted':>9} {f'{iv} % interval':>17}  "
          "verdict")
    for r in results:
        for g in r["rows"]:
            p = g["predicted"]
            print(f"{r['config']:<7} {g['metric']:<22} {g['base']:>9.2f} {g['new']:>9.2f} "
                  f"{g['gain_pct']:>+8.2f}% [{g['ci'][0]:>+6.2f}, {g['ci'][1]:>+6.2f}] "
                  f"{', '.join(f'{x:+.2f}' for x in g['rounds']):>17}  "
                  f"{'yes' if g['significant'] else 'no':<7} {p['median']:>+8.2f}% "
                  f"[{p['lo']:>+6.2f}, {p['hi']:>+6.2f}]  {g['verdict']}")
    print("\ndecode time (e2e latency - TTFT, summed), share vs fresh, paired bootstrap over request ids:")
    for r in results:
        pd = r["paired_decode"]
        acc = r["acceptance_length"]
        print(f"{r['config']:<7} {pd['gain_pct']:+.2f}% [{pd['ci'][0]:+.2f}, {pd['ci'][1]:+.2f}] "
              f"({pd['requests']} requests); acceptance length fresh {acc['fresh']:.3f}, "
              f"share {acc['share']:.3f}")
    ba = [r for r in results if "before_after" in r]
    if ba:
        print("\nthe faithful skip end to end: share (skip) vs share (keys still written), side by side")
        for r in ba:
            for g in r["before_after"]["rows"]:
                print(f"{r['config']:<7} {g['metric']:<22} {g['base']:>9.2f} {g['new']:>9.2f} "
                      f"{g['gain_pct']:>+8.2f}% [{g['ci'][0]:>+6.2f}, {g['ci'][1]:>+6.2f}] "
                      f"{', '.join(f'{x:+.2f}' for x in g['rounds']):>17}  "
                      f"{'significant' if g['significant'] else 'within noise'}  "
                      f"({r['before_after']['load']})")


def main() -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calibration", type=Path,
                    default=ROOT / "runs" / "heldout" / "calibration-bootstrap.json",
                    help="calibration with bootstrap refits (benchmarks/uncertainty_coverage.py)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "long-context")
    ap.add_argument("--only", nargs="*", default=list(CONFIGS), choices=CONFIGS)
    ap.add_argument("--rounds", type=int, default=2, help="real rounds, cores swapped each round")
    ap.add_argument("--draws", type=int, default=48, help="--uncertainty draws of the prediction")
    ap.add_argument("--jobs", type=int, default=1, help="processes for the prediction's draws")
    ap.add_argument("--weights", default="builtin")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="spec override for prediction and real run alike (e.g. a smaller workload)")
    ap.add_argument("--before", action="store_true",
                    help="also time share with the indexer keys still written (before the skip)")
    args = ap.parse_args()
    args.out = args.out.resolve()
    calibration = args.calibration.resolve()
    if not calibration.is_file():
        sys.exit(f"{calibration}: no such calibration file (benchmarks/uncertainty_coverage.py "
                 "writes one with bootstrap refits)")
    if args.rounds < 2:
        sys.exit("--rounds: expected at least 2 (the cores are swapped between rounds)")
    results = [measure(name, args, calibration) for name in args.only]
    report(results)
    from mtpsim.fileio import atomic_write_json

    all_ok = all(g["ok"] for r in results for g in r["rows"])
    atomic_write_json(args.out / "summary.json", {
        "machine": machine(), "calibration": str(calibration), "rounds": args.rounds,
        "sets": args.set, "all_ok": all_ok, "results": results})
    print(f"\nlong-context end to end: {'PASS' if all_ok else 'FAIL'}; summary in "
          f"{args.out / 'summary.json'}")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
