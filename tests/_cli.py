"""Running `python -m mtpsim` as a user's shell would, for the first-hour refusal tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_error_line(*args: str, quiet_stdout: bool = False) -> str:
    """`python -m mtpsim ARGS` from the checkout's root must exit 2 with exactly one line on
    stderr and no traceback (and nothing on stdout when `quiet_stdout`); returns that line."""
    r = subprocess.run([sys.executable, "-m", "mtpsim", *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.rstrip("\n").splitlines()  # a blank line before the error is a second line
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    if quiet_stdout:
        assert r.stdout == "", r.stdout
    return lines[0]
