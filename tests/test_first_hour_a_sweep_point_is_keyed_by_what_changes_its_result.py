"""A sweep point's id (its file's name, what a rerun resumes) hashes what its results depend on:
a renamed description (label) or a real-mode launch setting (runner) reuses every finished
simulated point; a setup change does not; a real sweep's points still tell runner settings
apart (they change what runs)."""

import json

import pytest
from _sweep_experiment import SMALL, write_small
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.errors import SpecError
from mtpsim.sweep import build_points

GRID = ["--set", "speculative.num_speculative_tokens=2,3"]


def sweep(exp, out, *extra):
    res = CliRunner().invoke(app, ["sweep", str(exp), *GRID, *extra, "--out", str(out), "--json",
                                   "-j", "1"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_a_renamed_description_or_a_runner_set_reuses_every_point(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    assert sweep(exp, out)["resumed"] == 0
    exp.write_text(SMALL.replace('"small sweep"', '"renamed"') + "[reference]\nthreads = 3\n")
    assert sweep(exp, out)["resumed"] == 2
    assert sweep(exp, out, "--set", "vllm.port=8123")["resumed"] == 2
    assert len(list((out / "points").glob("*.json"))) == 2
    exp.write_text(SMALL.replace("output_len = 60", "output_len = 61"))
    assert sweep(exp, out)["resumed"] == 0


def test_a_real_sweeps_points_tell_runner_settings_apart(tmp_path):
    exp = write_small(tmp_path)
    sets = ["reference.threads=1,2"]
    _, points = build_points(exp, sets, check_memory=False, kind="real")
    assert len({p.point_id for p in points}) == 2
    with pytest.raises(SpecError, match="changes no result"):
        build_points(exp, sets)


def test_a_prior_counts_for_uncertainty_draws_only(tmp_path):
    exp = write_small(tmp_path)
    sets = ["uncertainty.discrepancy_pct=3,4"]
    _, points = build_points(exp, sets, kind="uncertainty")
    assert len({p.point_id for p in points}) == 2
    with pytest.raises(SpecError, match="changes no result"):
        build_points(exp, sets)
