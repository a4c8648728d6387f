"""The tail figures `vllm bench serve` prints for public corpus rows, measured beside one seeded
`simulate` run per row and setting, with the KV cache's size, how full it got and the preemptions:
what a smaller cache (preemption) or another override would do to the tails.

    python benchmarks/public_row_tails.py ROW_ID [ROW_ID ...] [--gib 5,14,30] [--set section.key=value ...]

`--gib` sweeps `engine.non_kv_memory_gib`, the one memory term mtpsim assumes
(mtpsim/models/memory.py): raising it is the same as a smaller cache for whatever reason (a larger
activation peak in vLLM's profile run, graphs, workspaces). A diagnostic, not a fit: nothing is
written and no default moves."""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("median_itl_ms", "p99_itl_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
           "median_ttft_ms", "p99_ttft_ms", "output_throughput", "duration")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", nargs="+", help="row ids of docs/data/public/rows.toml")
    ap.add_argument("--gib", default="", help="engine.non_kv_memory_gib values, comma-separated")
    ap.add_argument("--set", action="append", default=[], help="section.key=value override")
    a = ap.parse_args(argv)
    os.chdir(ROOT)
    from mtpsim.models.memory import kv_cache_size
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    rows = {r["id"]: r for r in tomllib.loads(Path("docs/data/public/rows.toml").read_text())["row"]}
    gibs = [f"engine.non_kv_memory_gib={g}" for g in a.gib.split(",") if g] or [""]
    print("| row | setting | KV tokens per engine | peak held % | preemptions (requests) | "
          + " | ".join(FIGURES) + " |")
    print("| --- " * (5 + len(FIGURES)) + "|")
    for rid in a.rows:
        meas = rows[rid]["measured"]
        print(f"| {rid} | measured | | | | " + " | ".join(f"{meas[k]:,.1f}" for k in FIGURES) + " |")
        for g in gibs:
            exp = load_experiment(f"experiments/public/{rid}.toml", [*a.set, *([g] if g else [])])
            res = simulate(exp, exp.policies[0] if exp.k else "no_mtp")
            x = res.extra
            peak = "-" if x.kv_cache_peak_pct is None else f"{x.kv_cache_peak_pct:.0f}"
            print(f"| {rid} | {g.split('=')[-1] or 'spec'} | {kv_cache_size(exp).tokens:,} | {peak} | "
                  f"{x.num_preemptions or 0:,} ({x.preempted_requests or 0:,}) | "
                  + " | ".join(f"{res.metrics[k]:,.1f}" for k in FIGURES) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
