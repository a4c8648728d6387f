"""`--out`, `--plot` and `--save-calibration` name folders the commands write into: one that
cannot be a folder is a one-line error with exit code 2 before anything is simulated."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

EXPERIMENT = Path(__file__).parent.parent / "experiments" / "pr47352.toml"


@pytest.fixture
def blocker(tmp_path: Path) -> Path:
    """A plain file where a folder is wanted."""
    p = tmp_path / "taken"
    p.write_text("")
    return p


@pytest.mark.parametrize("flag", ["--out", "--plot"])
@pytest.mark.parametrize("below", [False, True])
def test_simulate_refuses_a_file_as_its_output_folder(tmp_path, blocker, flag, below):
    exp = tmp_path / "exp.toml"
    shutil.copy(EXPERIMENT, exp)
    target = blocker / "sub" if below else blocker
    res = CliRunner().invoke(app, ["simulate", str(exp), "--set", "workload.num_prompts=4",
                                   flag, str(target)])
    assert res.exit_code == 2, res.output
    assert f"{flag}: {target}: expected a folder to write into" in res.output
    assert "Traceback" not in res.output and "simulated" not in res.output


@pytest.mark.parametrize("flag", ["--out", "--plot"])
def test_sweep_refuses_a_file_as_its_output_folder(tmp_path, blocker, flag):
    exp = tmp_path / "exp.toml"
    shutil.copy(EXPERIMENT, exp)
    res = CliRunner().invoke(app, ["sweep", str(exp), "--set", "workload.num_prompts=4,5",
                                   "-j", "1", flag, str(blocker)])
    assert res.exit_code == 2, res.output
    assert f"{flag}: {blocker}: expected a folder to write into" in res.output
    assert "Traceback" not in res.output
