"""COLUMNS=0 (some CI runners, containers and editor shells set it) made rich print every line 0
columns wide: tables, warnings and even the one-line errors vanished, and `--help` printed one
byte. A COLUMNS that names no width is now taken as unset (the terminal's width, else 80); a
non-ASCII digit such as "²" raised ValueError inside the error printer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.console import StdConsole

ROOT = Path(__file__).resolve().parents[1]
PR = str(ROOT / "experiments" / "pr47352.toml")


def run(columns: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": columns}
    return subprocess.run([sys.executable, "-m", "mtpsim", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=120)


@pytest.mark.parametrize("columns", ["0", "00", "\u00b2"])
def test_an_error_line_prints_whole_whatever_columns_says(columns):
    r = run(columns, "simulate", "/nonexist.toml")
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["error: /nonexist.toml: experiment file not found"]


def test_a_report_and_the_help_print_at_80_columns_under_columns_0():
    r = run("0", "simulate", PR, "--set", "workload.num_prompts=8")
    assert r.returncode == 0, r.stderr
    assert "Output token throughput (tok/s)" in r.stdout
    assert max(map(len, r.stdout.splitlines())) <= 80
    r = run("0", "--help")
    assert r.returncode == 0 and "simulate" in r.stdout


@pytest.mark.parametrize("stderr", [False, True])
def test_a_console_in_process_takes_columns_0_as_unset(monkeypatch, stderr):
    # the suite's CliRunner and a notebook print through the consoles without mtpsim's main()
    monkeypatch.setenv("COLUMNS", "0")
    console = StdConsole(stderr=stderr)
    assert console.width > 0
    assert console.current().width == console.width  # rich's own console agrees
