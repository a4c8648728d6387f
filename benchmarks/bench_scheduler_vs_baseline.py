"""CPU seconds of `mtpsim simulate` with vLLM's KV-cache scheduler against the code before it,
side by side: the pr47352 experiment (both policies), its `--uncertainty 64`, and (this
checkout only) the high-concurrency experiment that preempts.

Each command runs `--repeat` times, the two checkouts interleaved (A B A B ...) so load drifts
hit both alike; the table gives the median CPU seconds (user + sys of the child and its
workers) and wall seconds, and the ratio this / baseline. On a shared machine read the CPU
seconds and the ratios, not the wall times.

    git archive b90447c | tar -x -C /tmp/base    # the code before the scheduler
    python benchmarks/bench_scheduler_vs_baseline.py --baseline /tmp/base [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PR = "experiments/pr47352.toml"
HIGH = "experiments/high-concurrency/h200-tp8-long-prompts.toml"
COMMANDS: dict[str, list[str]] = {
    f"simulate {PR}": ["simulate", PR, "--json"],
    f"simulate {PR} --uncertainty 64 -j 1": ["simulate", PR, "--uncertainty", "64", "-j", "1",
                                             "--json"],
}


def timed(args: list[str], root: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child and its children) of one run from checkout `root`."""
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mtpsim", *args], cwd=root, env=env,
                   stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True, help="checkout of the code before")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    base = a.baseline.resolve()
    cases = [(name, args, root, tag) for name, args in COMMANDS.items()
             for root, tag in ((ROOT, "this"), (base, "baseline"))]
    if (ROOT / HIGH).is_file():
        cases.append((f"simulate {HIGH}", ["simulate", HIGH, "--json"], ROOT, "this"))
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {(c[0], c[3]): [] for c in cases}
    for _ in range(a.repeat):
        for name, args, root, tag in cases:
            runs[(name, tag)].append(timed(args, root))
    load = os.getloadavg()[0]
    print(f"median of {a.repeat} interleaved runs; load average {load:.1f} on {os.cpu_count()} "
          "cores")
    print(f"{'command':<62} {'checkout':<9} {'wall s':>8} {'CPU s':>7} {'CPU this/base':>14}")
    for name in dict.fromkeys(c[0] for c in cases):
        cpu = {}
        for tag in ("this", "baseline"):
            if (name, tag) not in runs:
                continue
            wall = statistics.median(r[0] for r in runs[(name, tag)])
            cpu[tag] = statistics.median(r[1] for r in runs[(name, tag)])
            ratio = (f"{cpu['this'] / cpu['baseline']:.2f}" if tag == "baseline" and "this" in cpu
                     else "")
            print(f"{name:<62} {tag:<9} {wall:>8.2f} {cpu[tag]:>7.2f} {ratio:>14}")


if __name__ == "__main__":
    main()
