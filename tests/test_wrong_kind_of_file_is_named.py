"""Handing `simulate` the deployment file that `advise` reads (both ship side by side in
experiments/), or `advise` an experiment, used to end in "deployment: unknown section or key"
(or "policies: unknown section"), which reads as a typo in the file. Both kinds of file now say
which command they are for, still in one line with exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENT = "experiments/advise-deepseek-v3.2-b200.toml"
EXPERIMENT = "experiments/pr47352.toml"


def _run(monkeypatch, *args: str):
    monkeypatch.chdir(ROOT)
    return CliRunner().invoke(app, list(args))


def _one_line_error(r) -> str:
    """The refusal's only line: exit 2, no traceback."""
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output
    return lines[0]


@pytest.mark.parametrize("command", ["simulate", "calibrate", "sweep"])
def test_a_deployment_file_given_to_an_experiment_command(monkeypatch, command):
    line = _one_line_error(_run(monkeypatch, command, DEPLOYMENT))
    assert line.startswith(f"error: {DEPLOYMENT}: deployment: ")
    assert "deployment file for mtpsim advise" in line
    assert "expected an experiment" in line


def test_an_experiment_given_to_advise(monkeypatch):
    line = _one_line_error(_run(monkeypatch, "advise", EXPERIMENT, "--draws", "2", "-j", "1"))
    assert line.startswith(f"error: {EXPERIMENT}: ")
    assert "experiment file for mtpsim simulate" in line
    assert "expected a deployment file" in line


def test_a_real_typo_still_reads_as_one(tmp_path, monkeypatch):
    bad = tmp_path / "typo.toml"
    bad.write_text((ROOT / DEPLOYMENT).read_text() + "\n[adviSe]\nk = [1]\n")
    r = _run(monkeypatch, "advise", str(bad), "--draws", "2", "-j", "1")
    assert r.exit_code == 2
    assert "adviSe: unknown section; expected deployment" in r.output
    exp = tmp_path / "exp.toml"
    exp.write_text((ROOT / EXPERIMENT).read_text() + "\n[modle]\nname = 'x'\n")
    r = _run(monkeypatch, "simulate", str(exp))
    assert r.exit_code == 2
    assert "modle: unknown section or key; expected one of model" in r.output
