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

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml"
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
            if f.is_file() and f.stat().st_size:
                continue
            if time.perf_counter() - t0 > budget_s:
                print(f"stopping at seed {s}: --budget-s {budget_s:g} used (run again to go on)")
                return
            rec = run_one(root, dep, out, args)
            atomic_write_json(f, rec)
            print(f"seed {s} {tag}: {rec['cpu_s']:.1f} s CPU, {rec['wall_s']:.1f} s wall, load "
                  f"{rec['load_1min'][0]:.1f}-{rec['load_1min'][1]:.1f}", flush=True)


def quoted(advice: dict) -> dict[str, dict]:
    return {f"k={r['k']} " + label.format(p=r["policy"]): r[key] for r in advice["rows"]
            for key, label in KEYS.items() if key in r}


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
            row = {}
            for end in ("lo", "hi"):
                xs = [g[end] for g in got]
                row[f"{end}_range"] = [min(xs), max(xs)]
                row[f"{end}_sd_over_seeds"] = statistics.stdev(xs) if len(xs) > 1 else None
            ses = [g["mc_se"] for g in got if "mc_se" in g]
            row["mc_se_median"] = statistics.median(ses) if ses else None
            row["mc_se_max"] = max(ses) if ses else None
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
                                      f"robust={a['recommendation']['robust']}" for a in adv}),
            "robustly_worse": sorted({next((v for v in a["verdict"] if v.startswith("robustly worse")),
                                           "none").split(":")[0] + ": " + ", ".join(
                re.findall(r"k=\d \w+", next((v for v in a["verdict"] if v.startswith("robustly worse")),
                                              ""))) for a in adv}),
            "not_met": [len(a.get("sampler", {}).get("not_met", {})) for a in adv],
        }
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="a checkout of the code before")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("runs/advise-seeds"))
    ap.add_argument("--budget-s", type=float, default=540.0,
                    help="start no new run after this many seconds (run again to go on)")
    ap.add_argument("--after-args", default="", help="extra advise flags for this checkout, e.g. "
                    "'--max-draws 1024'")
    ap.add_argument("--summarise", type=Path, default=None, help="only summarise this folder")
    ap.add_argument("--write", type=Path, default=None, help="write the summary (JSON) here")
    a = ap.parse_args()
    if a.summarise is None:
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
                  f"{r['mc_se_max'] or float('nan'):.2f}; effective draws {r['effective_draws_median']}")
        print(f"  share vs fresh verdicts {s['share_vs_fresh_verdicts']}; best fresh k {s['best_fresh_k']}; "
              f"recommendation {s['recommendation']}; {s['robustly_worse']}")
    if a.write:
        a.write.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(a.write, summary)


if __name__ == "__main__":
    main()
