"""Wall time of `mtpsim simulate` on the pr47352 experiment (both policies), on one core, and how
it grows with 10x the prompts (should be ~10x: linear in requests) and with 10x the output
tokens per request (should be far below 10x: bulk advance makes it sub-linear in tokens).

    python benchmarks/bench_simulate.py [--repeat 3] [--experiment experiments/pr47352.toml]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from mtpsim.sim.simulator import simulate  # noqa: E402
from mtpsim.spec import load_experiment  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def run_case(path: Path, overrides: list[str], repeat: int) -> dict[str, float]:
    """Best-of-`repeat` wall time for all policies of the experiment, and what was simulated."""
    exp = load_experiment(path, overrides)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        results = [simulate(exp, p) for p in exp.policies]
        best = min(best, time.perf_counter() - t0)
    return {
        "wall_s": best,
        "sim_s": sum(r.metrics["duration"] for r in results),
        "requests": sum(r.metrics["completed"] for r in results),
        "tokens": sum(r.metrics["total_output_tokens"] for r in results),
        "steps": sum(r.extra.num_steps for r in results),
        "iterations": sum(r.extra.python_iterations for r in results),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", type=Path, default=ROOT / "experiments" / "pr47352.toml")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--any-core", action="store_true", help="do not pin to one CPU core")
    args = ap.parse_args()
    if not args.any_core and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    exp = load_experiment(args.experiment)
    n, out = exp.workload.num_prompts, exp.workload.output_len
    cases = [("base", []),
             ("10x prompts", [f"workload.num_prompts={10 * n}"]),
             ("10x output tokens", [f"workload.output_len={10 * out}",
                                    f"workload.input_len={exp.workload.input_len // 2}"])]
    print(f"{args.experiment.name}: policies {', '.join(exp.policies)}; best of {args.repeat}; "
          f"{'any core' if args.any_core else 'one core'}")
    print(f"{'case':<18} {'wall s':>8} {'sim s':>9} {'sim/wall':>9} {'requests':>9} "
          f"{'out tokens':>11} {'steps':>7} {'py iters':>9} {'x wall':>7}")
    base = None
    for name, overrides in cases:
        r = run_case(args.experiment, overrides, args.repeat)
        base = base or r["wall_s"]
        print(f"{name:<18} {r['wall_s']:>8.3f} {r['sim_s']:>9.1f} {r['sim_s'] / r['wall_s']:>9.0f} "
              f"{r['requests']:>9.0f} {r['tokens']:>11,.0f} {r['steps']:>7.0f} "
              f"{r['iterations']:>9.0f} {r['wall_s'] / base:>7.1f}")


if __name__ == "__main__":
    main()
