"""CPU seconds of `mtpsim simulate` with vLLM's KV-cache scheduler against the code before it,
side by side: the pr47352 experiment (both policies), its `--uncertainty 64`, and (this
checkout only) the high-concurrency experiment that preempts.

Each command runs `--repeat` times, the two checkouts interleaved (A B A B ...) so load drifts
hit both alike; the table gives the median CPU seconds (user + sys of the child and its
workers) and wall seconds, and the ratio this / baseline. On a shared machine read the CPU
seconds and the ratios, not the wall times.

    git archive b90447c | tar -x -C /tmp/base    # the code before the scheduler
    python benchmarks/bench_scheduler_vs_baseline.py --baseline /tmp/base [--repeat 5]

With `--check-json` it first runs each command once from both checkouts and exits 1 unless
their `--json` outputs are equal but for timing fields (`wall_s`): a speed change must not
change results (use the code just before the change as the baseline).
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


TIMING = frozenset({"wall_s"})


def differences(a: object, b: object, path: str = "") -> list[str]:
    """Paths where two --json outputs differ, timing fields aside."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b)) if key not in TIMING
                for d in ([f"{path}/{key}"] if key not in a or key not in b
                          else differences(a[key], b[key], f"{path}/{key}"))]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [path]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path]


def check_json(base: Path) -> bool:
    """Each command's --json from both checkouts, compared; prints what differs."""
    import json

    same = True
    for name, args in COMMANDS.items():
        out = []
        for root in (ROOT, base):
            env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
            run = subprocess.run([sys.executable, "-m", "mtpsim", *args], cwd=root, env=env,
                                 capture_output=True, text=True, check=True)
            out.append(json.loads(run.stdout))
        diff = differences(*out)
        same = same and not diff
        print(f"{name}: {'identical but for ' + ', '.join(sorted(TIMING)) if not diff else diff[:5]}")
    return same


def timed(args: list[str], root: Path | str, nice: int = 0) -> tuple[float, float]:
    """(wall s, CPU s of the child and its children) of one run from checkout `root`, at niceness
    `nice` (0: as this process runs)."""
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    prefix = ["nice", "-n", str(nice)] if nice else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([*prefix, sys.executable, "-m", "mtpsim", *args], cwd=root, env=env,
                   stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True, help="checkout of the code before")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--check-json", action="store_true",
                    help="first check that both checkouts' --json outputs are equal but for timing")
    a = ap.parse_args()
    base = a.baseline.resolve()
    if a.check_json and not check_json(base):
        sys.exit(1)
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
