"""Every experiment file shipped in experiments/ runs as the command its header names: an
experiment through `mtpsim simulate` (reference-engine experiments price the reference model,
not DeepSeek-V3.2, so they fit a GPU without a calibration), a deployment file through
`mtpsim advise`. A shipped file that only errors is the first thing a new user meets."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.spec import load_experiment

REFUSED = "# mtpsim refuses it, as vLLM would refuse to start: "

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
FILES = sorted(EXPERIMENTS.rglob("*.toml"))


def test_there_are_experiments_to_check():
    assert len(FILES) >= 10


@pytest.mark.slow  # one simulate or advise per shipped file (~90 files); the commands themselves
# are tested in the fast loop on a few of them
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(EXPERIMENTS)) for p in FILES])
def test_the_shipped_file_runs(path, tmp_path):
    if "deployment" in tomllib.loads(path.read_text()):
        r = CliRunner().invoke(app, ["advise", str(path), "--draws", "2", "-j", "1", "--json",
                                     "--point-dir", str(tmp_path)])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["rows"]
        return
    sets = ["--set", "workload.num_prompts=8"]
    if tomllib.loads(path.read_text()).get("workload", {}).get("rounds", 1) > 8:  # one request a round
        sets += ["--set", "workload.rounds=8"]
    r = CliRunner().invoke(app, ["simulate", str(path), "--json", *sets])
    if REFUSED in path.read_text():  # a public row vLLM itself could not start: said in one line
        assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
        assert "Traceback" not in r.output and path.name in r.output
        return
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out["results"]) == set(load_experiment(path).policies)


def test_reference_engine_experiments_price_the_reference_model():
    exp = load_experiment(EXPERIMENTS / "reference-cpu.toml")
    assert exp.engine.scheduler == "reference" and exp.model.preset == "reference"
    assert exp.model.num_layers == 4 and exp.model.vocab_size == 256
    # an explicit preset still wins over the scheduler's default
    other = load_experiment(EXPERIMENTS / "reference-cpu.toml", ["model.preset=deepseek-v3.2"])
    assert other.model.num_layers == 61
