"""`--seed -1` on simulate and run-real was refused as "--set: seed: ...": the flag is passed on
as a `--set seed=` override, and the error named the override, not the flag the user typed.
It now names --seed (one line, exit 2), as compare's --seed already did."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [
    ["simulate", "experiments/pr47352.toml"],
    ["run-real", "experiments/reference-cpu.toml", "--engine", "reference"],
])
def test_a_negative_seed_names_the_flag(args, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    extra = ["--out", str(tmp_path / "out")] if args[0] == "run-real" else []
    r = CliRunner().invoke(app, [*args, *extra, "--seed", "-1"])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert lines[0].startswith("error: --seed: expected an integer >= 0, got -1"), lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [
    ["simulate", "experiments/pr47352.toml"],
    ["run-real", "experiments/reference-cpu.toml", "--engine", "reference"],
])
def test_a_seed_too_long_for_the_spec_names_the_flag(args, tmp_path, monkeypatch):
    """A 20-digit --seed was refused as "--set: seed: expected integers of at most 19 digits"
    (first-hour walk, third sitting); now it names --seed too."""
    monkeypatch.chdir(ROOT)
    extra = ["--out", str(tmp_path / "out")] if args[0] == "run-real" else []
    r = CliRunner().invoke(app, [*args, *extra, "--seed", "9" * 20])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert lines[0].startswith("error: --seed: expected an integer of at most 19 digits"), lines[0]
    assert not (tmp_path / "out").exists()
