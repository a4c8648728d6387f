"""Typer's own usage errors (missing argument, unknown option, a value out of range) are one
line and exit code 2 like every other bad input, and a file name holding a newline is escaped
instead of splitting the line. Checked on the real process: stderr as a user sees it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def _mtpsim(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("args, needle", [
    (["simulate"], "Missing argument"),
    (["simulate", "experiments/pr47352.toml", "--no-such-flag", "2"], "No such option: --no-such-flag"),
    (["sweep", "experiments/pr47352.toml", "-j", "0"], "--jobs"),
    (["compare", "x.json", "--num-boot", "abc"], "--num-boot"),
    (["no-such-command"], "No such command"),
])
def test_usage_errors_are_one_line_exit_2(args, needle):
    p = _mtpsim(*args)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: "), p.stderr
    assert needle in p.stderr and "╭" not in p.stderr and "Traceback" not in p.stderr


def test_a_file_name_with_a_newline_stays_on_one_line(tmp_path):
    odd = tmp_path / "a\nb.toml"
    odd.write_text("[workload]\nnum_prompts = -1\n")
    p = _mtpsim("simulate", str(odd))
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "a\\nb.toml" in p.stderr and "num_prompts" in p.stderr
