"""How far `mtpsim advise`'s quoted intervals and verdicts move with the Monte Carlo seed, and
what steadying them costs: the shipped example (experiments/advise-deepseek-v3.2-b200.toml) with
`seed = S`, S = 0..9, run by this checkout and by a checkout of the code before (--baseline),
interleaved (before/after, then after/before, ...), each `advise ... --json -j 1`, its CPU
seconds (the child's user + sys) beside its wall seconds and the load average. Then, per quoted
delta (share vs fresh, gain over the best fresh k, gain over no MTP) and per code: the ends'
SD over seeds, the MC SE the runs printed, the effective draws, and the verdicts seen.

    git -C /work/main archive <commit> | tar -x -C /tmp/before  # the code before
    python benchmarks/advise_seed_spread.py --baseline /tmp/before --out runs/advise-seeds
    python benchmarks/advise_seed_spread.py --summarise runs/advise-seeds \\
        --write docs/data/advise-seeds/summary.json

Resumable: a seed already in --out is not run again (so it can run in short chunks).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mtpsim.fileio import atomic_write_json, atomic_write_text
from mtpsim.uncertainty.intervals import Interval, verdict

sys.path.insert(0, str(Path(__file__).resolve().parent))
import seed_spread  # noqa: E402  (the folder options, resumability and spread both seed benchmarks share)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml"
TARGET = 0.1  # points: the MC SE a quoted end is held to
KEYS = {"gain_pct": "{p} gain", "gain_vs_no_mtp_pct": "{p} vs no MTP", "vs_fresh_same_k": "{p} vs fresh"}


def run_one(root: Path, dep: Path, out: Path, extra: list[str]) -> dict:
    """One `advise --json` from checkout `root`: its JSON and (wall s, CPU s, load averages)."""
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "mtpsim", "advise", str(dep), "--json", "-j", "1",
                          "--point-dir", str(out / "points"), *extra], cwd=root, env=env,
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"advice": json.loads(res.stdout), "wall_s": wall, "cpu_s": cpu,
            "load_1min": [load0, os.getloadavg()[0]], "utc": time.strftime("%H:%M:%S", time.gmtime())}


def run(baseline: Path, seeds: int, out: Path, extra: list[str], budget_s: float) -> None:
    out = out.resolve()  # each run's working directory is its checkout
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for s in range(seeds):
        dep = out / f"deployment-seed{s}.toml"
        atomic_write_text(dep, re.sub(r"(?m)^seed = \d+$", f"seed = {s}", EXAMPLE.read_text()))
        order = [("before", baseline, []), ("after", ROOT, extra)]
        for tag, root, args in (order if s % 2 == 0 else order[::-1]):  # interleaved
            f = out / f"{tag}-seed{s}.json"
            if seed_spread.done(f):
                continue
            if time.perf_counter() - t0 > budget_s:
                print(f"stopping at seed {s}: --budget-s {budget_s:g} used (run again to go on)")
                return
            rec = run_one(root, dep, out, args)
            atomic_write_json(f, rec)
            print(f"seed {s} {tag}: {rec['cpu_s']:.1f} s CPU, {rec['wall_s']:.1f} s wall, load "
                  f"{rec['load_1min'][0]:.1f}-{rec['load_1min'][1]:.1f}", flush=True)


def paired_one(dep: Path, out: Path) -> tuple[dict, dict]:
    """One `advise` in this process (-j 1) and both estimators on its draws: (after, before)
    records, the before's intervals what the code before computes from the same draws (the
    plain pooled quantiles: the control variate's draw points withheld). Each record: the JSON
    `advise --json` prints, the run's CPU seconds (simulations and this code's estimates at
    every stage), and `estimator_cpu_s`, the CPU of computing every row once with that
    estimator."""
    from mtpsim.report import advise as report
    from mtpsim.runs import advise as runs
    from mtpsim.uncertainty import sensitivity as sens
    from mtpsim.uncertainty.advise import Advice

    c0, t0 = time.process_time(), time.perf_counter()
    run = runs.advise(runs.load(dep), 1, out / "points")
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    recs = []
    units = Advice.units
    try:
        for plain in (False, True):
            if plain:
                Advice.units = lambda self: None  # no draw points: the plain pooled quantiles
            adv = run.advice
            adv._cache.clear()
            c1 = time.process_time()
            rows, rec = adv.rows(run.prob), adv.recommendation(run.prob)
            est = time.process_time() - c1
            why = runs.doubt(adv, run.prob)
            if why is not None:
                why["point"] = str(runs.write_point(run.dep, why, out / "points"))
                why["command"] = sens.command_for(why.pop("group"), why["point"], False)
            r = runs.AdviseRun(run.dep, adv, run.prob, rows, rec, why)
            recs.append({"advice": report.advise_json(dep, r, report.lines(r)), "wall_s": wall,
                         "cpu_s": cpu, "estimator_cpu_s": est, "load_1min": [os.getloadavg()[0]] * 2,
                         "utc": time.strftime("%H:%M:%S", time.gmtime())})
    finally:
        Advice.units = units
    return recs[0], recs[1]


def run_paired(seeds: int, out: Path, budget_s: float) -> None:
    """--paired: one simulation per seed, both estimators on the same draws (the difference
    between them is the estimator's alone); CPU from the run itself."""
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for s in range(seeds):
        if seed_spread.done(out / f"after-seed{s}.json") and seed_spread.done(out / f"before-seed{s}.json"):
            continue
        if time.perf_counter() - t0 > budget_s:
            print(f"stopping at seed {s}: --budget-s {budget_s:g} used (run again to go on)")
            return
        dep = out / f"deployment-seed{s}.toml"
        atomic_write_text(dep, re.sub(r"(?m)^seed = \d+$", f"seed = {s}", EXAMPLE.read_text()))
        after, before = paired_one(dep, out)
        atomic_write_json(out / f"before-seed{s}.json", before)
        atomic_write_json(out / f"after-seed{s}.json", after)
        print(f"seed {s} paired: {after['cpu_s']:.1f} s CPU, {after['wall_s']:.1f} s wall; rows "
              f"{after['estimator_cpu_s']:.1f} s CPU with the control variate, "
              f"{before['estimator_cpu_s']:.1f} s plain", flush=True)


def quoted(advice: dict) -> dict[str, dict]:
    """The quoted delta intervals by label (the best fresh setting's own gain, 0, is not one)."""
    return {f"k={r['k']} " + label.format(p=r["policy"]): r[key] for r in advice["rows"]
            for key, label in KEYS.items() if key in r and not (key == "gain_pct" and r.get("baseline"))}


def share_verdicts(advice: dict, margin: bool) -> dict[str, str]:
    """The table's share-vs-fresh verdict per k (the code before judged the ends as they were;
    the code after moves each end out by 2 MC SE first)."""
    out = {}
    for r in advice["rows"]:
        iv = r.get("vs_fresh_same_k")
        if iv is None:
            continue
        i = Interval(iv["median"], iv["lo"], iv["hi"], half=iv.get("region", 0.5),
                     mc_se=iv.get("mc_se", float("nan")))
        out[f"k={r['k']}"] = verdict(i, "share", "fresh", "output_throughput", r["k"], mc_margin=margin)
    return out


def summarise(folder: Path) -> dict:
    summary: dict = {}
    for tag in ("before", "after"):
        recs = []
        for f in sorted(folder.glob(f"{tag}-seed*.json"), key=lambda p: int(p.stem.split("seed")[1])):
            d = json.loads(f.read_text())
            recs.append((int(f.stem.split("seed")[1]), d))
        if not recs:
            continue
        ivs = [quoted(d["advice"]) for _, d in recs]
        rows = {}
        for label in ivs[0]:
            got = [q[label] for q in ivs]
            row = seed_spread.ends_over_seeds(got)
            ses = [g["mc_se"] for g in got if "mc_se" in g]
            row["mc_se_median"] = statistics.median(ses) if ses else None
            row["mc_se_max"] = max(ses) if ses else None
            row["runs_meeting_target"] = sum(g.get("mc_se", math.inf) <= TARGET for g in got)
            r2 = [g["control_r2"] for g in got if "control_r2" in g]  # the control variate's R²
            row["control_r2_median"] = statistics.median(r2) if r2 else None
            # JSON writes an unbounded count (an end with no Monte Carlo error) as null
            effs = [math.inf if g["effective_draws"] is None else g["effective_draws"]
                    for g in got if "effective_draws" in g]
            med = statistics.median(effs) if effs else None
            row["effective_draws_median"] = None if med is None or math.isinf(med) else med
            rows[label] = row
        adv = [d["advice"] for _, d in recs]
        verdicts = [share_verdicts(a, tag == "after") for a in adv]
        summary[tag] = {
            "seeds": [s for s, _ in recs],
            "draws": [a["draws"] for a in adv],
            "cpu_s": [d["cpu_s"] for _, d in recs], "wall_s": [d["wall_s"] for _, d in recs],
            "load_1min": [d["load_1min"] for _, d in recs], "utc": [d["utc"] for _, d in recs],
            "intervals": rows,
            "share_vs_fresh_verdicts": {k: sorted({v[k] for v in verdicts}) for k in verdicts[0]},
            "best_fresh_k": sorted({a["best_fresh_k"] for a in adv}),
            "recommendation": sorted({f"k={a['recommendation']['k']} {a['recommendation']['policy']} "
                                      f"(best median k={a['best_median']['k']} "
                                      f"{a['best_median']['policy']} robust={a['best_median']['robust']})"
                                      for a in adv}),
            "robustly_worse": sorted({next((v for v in a["verdict"] if v.startswith("robustly worse")),
                                           "none").split(":")[0] + ": " + ", ".join(
                re.findall(r"k=\d \w+", next((v for v in a["verdict"] if v.startswith("robustly worse")),
                                              ""))) for a in adv}),
            "not_met": [len(a.get("sampler", {}).get("not_met", {})) for a in adv],
            "ends_meeting_target": [sum(iv.get("mc_se", math.inf) <= TARGET for iv in q.values())
                                    for q in ivs],
            "quoted": len(ivs[0]),
        }
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="a checkout of the code before")
    ap.add_argument("--paired", action="store_true", help="one run per seed in this process, "
                    "both estimators on its draws (before: the plain pooled quantiles)")
    seed_spread.folder_options(ap, "runs/advise-seeds")
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="start no new run after this many seconds (run again to go on)")
    ap.add_argument("--after-args", default="", help="extra advise flags for this checkout, e.g. "
                    "'--max-draws 1024'")
    a = ap.parse_args()
    if a.summarise is None and a.paired:
        run_paired(a.seeds, a.out, a.budget_s)
    elif a.summarise is None:
        if a.baseline is None:
            ap.error("--baseline is required to run (or --summarise FOLDER)")
        run(a.baseline.resolve(), a.seeds, a.out, a.after_args.split(), a.budget_s)
    summary = summarise(a.summarise or a.out)
    for tag, s in summary.items():
        print(f"{tag}: seeds {s['seeds']}, draws {sorted(set(s['draws']))}, CPU s "
              f"{[round(x, 1) for x in s['cpu_s']]}, wall s {[round(x, 1) for x in s['wall_s']]}, "
              f"load {[round(x[0], 1) for x in s['load_1min']]}")
        for label, r in s["intervals"].items():
            sd = [r["lo_sd_over_seeds"], r["hi_sd_over_seeds"]]
            print(f"  {label:<22} SD over seeds lo/hi "
                  + "/".join("-" if x is None else f"{x:.2f}" for x in sd)
                  + f"; printed MC SE median {r['mc_se_median'] or float('nan'):.2f} max "
                  f"{r['mc_se_max'] or float('nan'):.2f}; effective draws {r['effective_draws_median']}; "
                  f"runs meeting {TARGET} {r['runs_meeting_target']}; control R² {r['control_r2_median']}")
        print(f"  share vs fresh verdicts {s['share_vs_fresh_verdicts']}; best fresh k {s['best_fresh_k']}; "
              f"recommendation {s['recommendation']}; {s['robustly_worse']}; quoted ends meeting "
              f"{TARGET} per run {s['ends_meeting_target']} of {s['quoted']}")
    seed_spread.write(summary, a.write)


if __name__ == "__main__":
    main()
