"""`mtpsim --help` and each command's `--help` start without numpy or scipy, and a simulation
without a request spread imports no scipy (start-up is most of a short simulation's time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HELP = """
import sys
from typer.testing import CliRunner
from mtpsim.cli import COMMANDS, app
for args in [["--help"]] + [[name, "--help"] for name, _ in COMMANDS]:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, (args, r.output)
print(sorted(m for m in ("numpy", "scipy") if m in sys.modules))
"""

SIMULATE = """
import sys
from typer.testing import CliRunner
from mtpsim.cli import app
r = CliRunner().invoke(app, ["simulate", sys.argv[1], "--set", "workload.num_prompts=8",
                             "--set", "workload.output_len=64", "--json"])
assert r.exit_code == 0, r.output
print(sorted(m for m in ("numpy", "scipy") if m in sys.modules))
"""


def run(code: str, *args: str) -> str:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_help_imports_neither_numpy_nor_scipy():
    assert run(HELP) == "[]"


def test_simulating_without_request_spread_imports_no_scipy():
    # pr47352 has request_sigma = 0: no spread offsets to solve, no normal quantiles to draw
    assert run(SIMULATE, str(ROOT / "experiments" / "pr47352.toml")) == "['numpy']"
