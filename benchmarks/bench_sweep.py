"""A 100-point sweep of experiments/pr47352.toml (both policies per point) on the local cores.

Grid: k = 1..5 x max_concurrency 1, 4, 16, 64 x input_len 2048, 4096, 8192, 10240, 16384.
Prints the wall time, points per second and the workers used; the target is under a minute.
Run: python benchmarks/bench_sweep.py [--jobs N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from mtpsim import sweep
from mtpsim.runs.executor import default_workers

EXPERIMENT = str(Path(__file__).resolve().parents[1] / "experiments" / "pr47352.toml")
GRID = ["speculative.num_speculative_tokens=1,2,3,4,5", "workload.max_concurrency=1,4,16,64",
        "workload.input_len=2048,4096,8192,10240,16384"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=default_workers())
    args = ap.parse_args()
    axes, points = sweep.build_points(EXPERIMENT, GRID)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        t0 = time.perf_counter()
        done = list(sweep.run_points(EXPERIMENT, points, out, args.jobs))
        wall = time.perf_counter() - t0
        t1 = time.perf_counter()
        again = list(sweep.run_points(EXPERIMENT, points, out, args.jobs))
        resume = time.perf_counter() - t1
    assert len(done) == len(points) == 100 and all(r.get("resumed") for r in again)
    sims = sum(len(r["results"]) for r in done)
    print(f"{len(points)} points ({sims} simulations of 256 requests) in {wall:.1f} s wall on "
          f"{args.jobs} worker(s): {len(points) / wall:.2f} points/s "
          f"({'under' if wall < 60 else 'OVER'} the 60 s target); resume of the finished sweep "
          f"{resume:.2f} s")


if __name__ == "__main__":
    main()
