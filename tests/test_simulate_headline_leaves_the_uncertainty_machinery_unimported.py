"""A plain `mtpsim simulate` words its first line, the saved `--uncertainty` interval and its
verdict, without importing the draws and summaries that made it, nor the file writers: each is
source that a run compiles again where bytecode is not cached (this project's machine sets
PYTHONDONTWRITEBYTECODE), and start-up is most of a short simulation's time (docs/speed.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# and scipy, which no table of a plain simulate needs
UNNEEDED = ("mtpsim.uncertainty.summary", "mtpsim.uncertainty.draws", "mtpsim.uncertainty.domain",
            "mtpsim.fileio", "scipy")

SCRIPT = """
import contextlib, io, sys
unneeded = sys.argv[2:]
sys.argv = ["mtpsim", "simulate", sys.argv[1]]
from mtpsim.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as e:
        assert not e.code, e.code
lines = out.getvalue().splitlines()
first = lines[:next(i for i, line in enumerate(lines) if line.startswith(" "))]  # until "  measured"
print(" ".join(" ".join(first).split()))
print(",".join(m for m in unneeded if m in sys.modules))
"""


def test_simulate_quotes_the_saved_interval_without_importing_the_draws():
    out = subprocess.run([sys.executable, "-c", SCRIPT, "experiments/pr47352.toml", *UNNEEDED],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    first, imported = out.stdout.splitlines()[0], out.stdout.splitlines()[-1]
    assert first.startswith("share vs fresh, output throughput: "), first
    assert "% interval" in first and "no interval" not in first, first  # the saved one, worded
    assert imported == "", f"simulate imported {imported}"
