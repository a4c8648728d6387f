"""A flag given an empty value (`--out ''`, `--plot=`: an unset shell variable in a script) is one
line and exit 2 before any work: an empty path would be the current folder, where simulate wrote
its results and run-real resumed from whatever result files were there."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.cli import empty_flag

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("argv, flag", [
    (["simulate", "x.toml", "--out", ""], "--out"),
    (["simulate", "x.toml", "--plot="], "--plot"),
    (["run-real", "x.toml", "-p", " "], "-p"),
    (["sweep", "x.toml", "--set", "workload.max_concurrency=1,4", "--out", ""], "--out"),
])
def test_the_empty_flag_is_named(argv, flag):
    assert empty_flag(argv) == flag


def test_plain_values_and_set_assignments_pass():
    assert empty_flag(["simulate", "x.toml", "--out", "runs/a", "--set", "model.name=", "--json"]) is None
    assert empty_flag(["compare", "--", ""]) is None  # after --, words are not flags' values


def test_simulate_with_an_empty_out_writes_nothing(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    spec = str(ROOT / "experiments" / "pr47352.toml")
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", spec, "--out", ""], cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --out: expected a value, got an empty string (an unset shell "
                                "variable?)")
    assert list(tmp_path.iterdir()) == []
