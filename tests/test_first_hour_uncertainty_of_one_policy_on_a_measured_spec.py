"""First-hour crashes found by a crash hunt: `--uncertainty` of one policy on a spec with measured
rows (`simulate pr47352 -p fresh`, or a sweep over `policies`) conditions and prints that policy's
intervals (it raised KeyError on the missing share-vs-fresh delta: the noise-sensitivity and
narrowing tables decide a delta, and the measured table listed the other policy's row); and
`advise` with k beyond the PR's three measured positions writes a measurement point that loads."""

import json

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

PR = "experiments/pr47352.toml"


def test_one_policy_gets_its_conditioned_intervals_and_no_delta_tables():
    res = CliRunner().invoke(app, ["simulate", PR, "--uncertainty", "4", "-j", "1", "-p", "share"],
                             env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "conditioned on all measured rows" in res.stdout and "What each measurement did" not in res.stdout
    res = CliRunner().invoke(app, ["simulate", PR, "--uncertainty", "4", "-j", "1", "-p", "fresh", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["noise_sensitivity"] == [] and "fresh" in out["summary"]["all measured rows"]["metrics"]


def test_a_sweep_over_policies_with_one_alone_runs():
    res = CliRunner().invoke(app, ["sweep", PR, "--uncertainty", "4", "-j", "1", "--set",
                                   'policies=["fresh"],["fresh","share"]'], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output


def test_an_advise_cell_beyond_the_prs_positions_writes_a_point_that_loads(tmp_path):
    """advise k = 4..8: the measurement point is the PR's experiment with the cell's settings; it
    must carry the rates the cell ran (the PR measured 3 positions), not fail to load and blame
    experiments/pr47352.toml for a k the user never set there."""
    from mtpsim.runs.advise import PR_EXPERIMENT, cell_sets
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.advise import _rates, load_deployment

    dep_file = tmp_path / "d.toml"
    dep_file.write_text('[deployment]\nmodel = "deepseek-v3.2"\ngpu = "b200"\ntp = 4\n'
                        'quantization = "nvfp4"\n[workload]\ncontext_lengths = [1024]\n'
                        'concurrency = [8]\n[advise]\nk = [5]\n')
    dep = load_deployment(str(dep_file))
    for k in (2, 5, 8):
        exp = load_experiment(str(PR_EXPERIMENT), cell_sets(dep, k, 1024))
        assert exp.k == k and len(exp.acceptance.per_position) >= k
        if k > 3:
            assert list(exp.acceptance.per_position) == pytest.approx(list(_rates(k)), rel=1e-5)
