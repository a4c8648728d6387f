"""CPU seconds of `mtpsim simulate experiments/pr47352.toml` (both policies) and its
`--uncertainty 64 -j 1` from several checkouts, interleaved (A B C ... per round, so load drifts
hit all alike), every run under `nice -n 19`.

    git archive COMMIT | tar -x -C DIR          # one folder per checkout
    python benchmarks/bench_checkouts_cpu.py --repeat 3 DIR1 DIR2 ...
    python benchmarks/bench_checkouts_cpu.py --set uncertainty.max_draws=0 DIR1 DIR2 ...  # 64 draws

Prints each run (wall s, CPU s of the child, load average) and then per checkout the median wall
and CPU seconds. On a shared machine read the CPU seconds and their ratios, not the wall times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scheduler_vs_baseline import timed  # noqa: E402  (one child-timing helper)

PR = "experiments/pr47352.toml"
COMMANDS = {"simulate": ["simulate", PR, "--json"],
            "uncertainty 64": ["simulate", PR, "--uncertainty", "64", "-j", "1", "--json"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to the --uncertainty 64 command (e.g. uncertainty.max_draws=0: "
                    "the 64 prior draws only, without the adaptive stages)")
    ap.add_argument("roots", nargs="+", help="checkout folders")
    a = ap.parse_args()
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    loads = []
    commands = {n: [*args, *(x for kv in a.set for x in ("--set", kv))] if "uncertainty" in n
                else args for n, args in COMMANDS.items()}
    for _ in range(a.repeat):
        for name, args in commands.items():
            for root in a.roots:
                wall, cpu = timed(args, root, nice=19)
                loads.append(os.getloadavg()[0])
                runs.setdefault((name, root), []).append((wall, cpu))
                print(f"{name:15} {root:40} wall {wall:7.2f} cpu {cpu:6.2f} load {loads[-1]:.1f}",
                      flush=True)
    print(f"load average min {min(loads):.1f}, median {statistics.median(loads):.1f}, "
          f"max {max(loads):.1f}")
    for (name, root), v in runs.items():
        print(f"{name:15} {root:40} median wall {statistics.median(x[0] for x in v):7.2f} "
              f"median cpu {statistics.median(x[1] for x in v):6.2f} "
              f"all cpu {[round(x[1], 2) for x in v]}")


if __name__ == "__main__":
    main()
