"""`mtpsim` with no command prints its help once and exits 2 (it printed the whole help twice:
Typer's rich help, then the handler's own copy)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bare_mtpsim_prints_the_help_once():
    res = subprocess.run([sys.executable, "-m", "mtpsim"], capture_output=True, text=True, cwd=ROOT,
                         timeout=60, env={"COLUMNS": "100", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert res.returncode == 2
    out = res.stdout + res.stderr
    assert out.count("Usage: ") == 1 and "simulate" in out, out
