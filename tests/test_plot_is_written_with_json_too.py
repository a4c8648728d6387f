"""`--plot DIR --json` writes the plots, as `compare --json --plot` always did: simulate, sweep
and advise created DIR and left it empty when --json was given (exit 0, no word), so a script
asking for JSON and plots got no plots. stdout stays one JSON document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("matplotlib")

CASES = {
    "simulate": ["simulate", "experiments/pr47352.toml", "--set", "workload.num_prompts=8"],
    "sweep": ["sweep", "experiments/pr47352.toml", "--set", "workload.max_concurrency=4,8",
              "--set", "workload.num_prompts=8", "-j", "1"],
    "advise": ["advise", "experiments/advise-deepseek-v3.2-b200.toml", "--draws", "2", "-j", "1"],
}


@pytest.mark.parametrize("name", list(CASES))
def test_json_and_plot_write_both(name, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    plots = tmp_path / "plots"
    args = [*CASES[name], "--plot", str(plots), "--json"]
    if name == "advise":
        args += ["--point-dir", str(tmp_path / "points")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)
    assert sorted(p.suffix for p in plots.iterdir()) and all(
        p.suffix == ".png" and p.stat().st_size > 0 for p in plots.iterdir()), list(plots.iterdir())
