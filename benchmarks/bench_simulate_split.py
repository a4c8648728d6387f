"""Where the CPU seconds of one `mtpsim simulate experiments/pr47352.toml` process go: the
interpreter with its site hooks, numpy with numpy.random, mtpsim's modules (and, within them,
creating their dataclasses), and the run itself (both policies simulated and printed).

    python benchmarks/bench_simulate_split.py [--repeat 12] [--python PYTHON]

Each of `--repeat` child processes reads its own CPU clock (`time.process_time`) at each step,
as `mtpsim.cli.main` would take them (OPENBLAS_NUM_THREADS=1 set before numpy, as the entry
point sets it; the tables printed to a buffer); the table gives the medians and the lowest, and
the whole child's CPU seconds (user + sys) beside them. `--python PYTHON` runs the children with
another interpreter, e.g. a fresh venv's where `pip install .` installed mtpsim: they then run
from a folder holding only the experiment files (no mtpsim/ folder on the path). Without it the
children import this checkout (PYTHONPATH), with bytecode cached in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXP = "experiments/pr47352.toml"
STEPS = ("interpreter + site", "numpy + numpy.random", "mtpsim's modules",
         "  of which creating dataclasses", "the run (simulate both, print)")

CHILD = r"""
import time
t0 = time.process_time()
import contextlib, dataclasses, io, os, sys
made = [0.0, 0]
_process = dataclasses._process_class

def _timed(cls, *a, **k):
    t = time.process_time()
    try:
        return _process(cls, *a, **k)
    finally:
        made[0] += time.process_time() - t
        made[1] += 1

dataclasses._process_class = _timed
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy, numpy.random
t1 = time.process_time()
import mtpsim.cli, mtpsim.commands.simulate, mtpsim.runs.simulate, mtpsim.sim.simulator, mtpsim.sim.planned
import mtpsim.spec, mtpsim.report.simulate, mtpsim.report.fit, mtpsim.report.headline, mtpsim.plainprint
import mtpsim.uncertainty.saved, mtpsim.uncertainty.intervals, mtpsim.uncertainty.priors
import mtpsim.models.roofline, mtpsim.models.memory, mtpsim.spec.roles, mtpsim.sim.decoding
t2, at_import = time.process_time(), made[0]
sys.argv = ["mtpsim", "simulate", sys.argv[1]]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        mtpsim.cli.main()
    except SystemExit as e:
        assert not e.code, e.code
t3 = time.process_time()
print(t0, t1 - t0, t2 - t1, at_import, t3 - t2, made[1])
"""


def child(python: str, cwd: Path, env: dict[str, str]) -> tuple[list[float], float, int]:
    """The steps' CPU seconds of one child, its whole CPU seconds, and its dataclasses count."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([python, "-c", CHILD, EXP], cwd=cwd, env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    whole = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return [float(x) for x in out[:5]], whole, int(out[5])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=12)
    ap.add_argument("--python", help="an interpreter whose environment has mtpsim installed")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-split-") as tmp:
        if args.python:
            python, cwd = args.python, Path(tmp) / "run"
            shutil.copytree(ROOT / "experiments", cwd / "experiments")
            shutil.copytree(ROOT / "docs/data/pr47352-uncertainty", cwd / "docs/data/pr47352-uncertainty")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        else:
            python, cwd = sys.executable, ROOT
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env.update(PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=tmp)
        child(python, cwd, env)  # warm-up (writes the cached bytecode where it is this checkout's)
        load = [os.getloadavg()[0]]
        runs = [child(python, cwd, env) for _ in range(args.repeat)]
        load.append(os.getloadavg()[0])
    print(f"{python}: {args.repeat} runs, load average (1 min) {min(load):.1f}-{max(load):.1f}, "
          f"{runs[0][2]} dataclasses created")
    print(f"{'step':<34} {'CPU s median':>13} {'lowest':>8}")
    for i, name in enumerate(STEPS):
        xs = [r[0][i] for r in runs]
        print(f"{name:<34} {statistics.median(xs):>13.3f} {min(xs):>8.3f}")
    inside = [sum(r[0][j] for j in (0, 1, 2, 4)) for r in runs]
    whole = [r[1] for r in runs]
    print(f"{'sum of the steps':<34} {statistics.median(inside):>13.3f} {min(inside):>8.3f}")
    print(f"{'whole process (user + sys)':<34} {statistics.median(whole):>13.3f} {min(whole):>8.3f}")


if __name__ == "__main__":
    main()
