"""The tail figures `vllm bench serve` prints for public corpus rows, measured beside one seeded
`simulate` run per row and setting, with the KV cache's size, how full it got and the preemptions:
what a smaller cache (preemption) or another override would do to the tails.

    python benchmarks/public_row_tails.py ROW_ID [ROW_ID ...] [--gib 5,14,30] [--set section.key=value ...]

`--gib` sweeps `engine.non_kv_memory_gib`, the one memory term mtpsim assumes
(mtpsim/models/memory.py): raising it is the same as a smaller cache for whatever reason (a larger
activation peak in vLLM's profile run, graphs, workspaces). A diagnostic, not a fit: nothing is
written and no default moves.

The last column is `vllm bench serve`'s "Peak output token throughput": the most streamed messages
(the first token and one per ITL) in any one-second bucket from the first request's start
(vLLM 0.33.0 `vllm/benchmarks/serve.py` ~line 714). rows.toml does not store it; PEAK holds the
GPUStack page's printed values for its training rows (docs/data/public/rows.toml, source
`gpustack-h200`). With data parallelism mtpsim simulates one rank and scales its totals by dp
(mtpsim/sim/simulator.py); the peak is scaled the same way."""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ("median_itl_ms", "p99_itl_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
           "median_ttft_ms", "p99_ttft_ms", "output_throughput", "duration")
PEAK = {"gpustack-h200-vllm-tp8-nodeepgemm-sharegpt": 6010.0,
        "gpustack-h200-vllm-tp8-toolcall-sharegpt": 6095.0,
        "gpustack-h200-vllm-tp8-maxlen32k-sharegpt": 6293.0,
        "gpustack-h200-vllm-dp8ep-sharegpt": 10222.0,
        "gpustack-h200-vllm-tp8-random2000x100": 4085.0}


def peak_messages_per_s(requests) -> float:
    """vllm bench serve's peak output throughput: one count per streamed message (first token,
    then one per ITL) in one-second buckets from the earliest start."""
    t0 = min(r.arrival_s for r in requests)
    times = [np.concatenate([[r.first_token_s], r.first_token_s
                             + np.cumsum(np.repeat(r.itl_s, r.itl_count))]) for r in requests]
    buckets = np.floor(np.concatenate(times) - t0).astype(np.int64)
    return float(np.bincount(buckets[buckets >= 0]).max())


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
          + " | ".join(FIGURES) + " | peak msgs/s |")
    print("| --- " * (6 + len(FIGURES)) + "|")
    for rid in a.rows:
        meas = rows[rid]["measured"]
        peak = f"{PEAK[rid]:,.0f}" if rid in PEAK else "-"
        print(f"| {rid} | measured | | | | " + " | ".join(f"{meas[k]:,.1f}" for k in FIGURES)
              + f" | {peak} |")
        for g in gibs:
            exp = load_experiment(f"experiments/public/{rid}.toml", [*a.set, *([g] if g else [])])
            res = simulate(exp, exp.policies[0] if exp.k else "no_mtp")
            x = res.extra
            peak = "-" if x.kv_cache_peak_pct is None else f"{x.kv_cache_peak_pct:.0f}"
            print(f"| {rid} | {g.split('=')[-1] or 'spec'} | {kv_cache_size(exp).tokens:,} | {peak} | "
                  f"{x.num_preemptions or 0:,} ({x.preempted_requests or 0:,}) | "
                  + " | ".join(f"{res.metrics[k]:,.1f}" for k in FIGURES)
                  + f" | {peak_messages_per_s(res.requests) * (x.dp_ranks or 1):,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
