"""`--uncertainty` of one policy on a spec with measured rows (`simulate pr47352 -p fresh`, or a
sweep over `policies`) conditions and prints that policy's intervals: it raised KeyError on the
missing share-vs-fresh delta (the noise-sensitivity and narrowing tables decide a delta, and the
measured table listed the other policy's row)."""

import json

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
