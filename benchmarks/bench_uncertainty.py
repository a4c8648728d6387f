"""Speed of `--uncertainty` and `advise`: wall and CPU seconds, in process and on the pool.

    python benchmarks/bench_uncertainty.py [--draws 64] [--advise]

Prints, for `mtpsim simulate experiments/pr47352.toml --uncertainty N` (both policies), the wall
time with the draws run in this process (-j 1) and on the process pool (-j cores), and the CPU
seconds each took (this process and its workers), so a loaded machine's figures can be read as
CPU per draw; with --advise, the same for the shipped advise example. Targets (issue 9): <= 5 s
wall for 64 draws on 2 cores, <= 60 s for the default advise.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(label: str, fn) -> None:
    c0, t0 = _cpu(), time.perf_counter()
    fn()
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    print(f"{label:<52} wall {wall:7.1f} s   cpu {cpu:7.1f} s   load {os.getloadavg()[0]:.1f}",
          flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=64)
    ap.add_argument("--advise", action="store_true")
    args = ap.parse_args()
    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.run import propagate

    exp = str(ROOT / "experiments" / "pr47352.toml")
    jobs = default_workers()
    timed(f"pr47352 --uncertainty {args.draws}, in process (-j 1)",
          lambda: propagate(exp, [], args.draws, 1))
    timed(f"pr47352 --uncertainty {args.draws}, pool (-j {jobs})",
          lambda: propagate(exp, [], args.draws, jobs))
    if args.advise:
        from mtpsim.uncertainty.advise import advise, load_deployment

        dep = load_deployment(ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml")
        timed(f"advise example ({dep.draws} draws doubling to at most {dep.max_draws}), pool (-j {jobs})",
              lambda: advise(dep, jobs))


if __name__ == "__main__":
    main()
