"""`simulate --uncertainty N --out DIR` writes DIR/uncertainty.json beside the results a plain
`--out` wrote (the README runs both into one folder): `compare DIR` then failed on it, blaming a
missing `duration`. A folder's uncertainty.json is skipped; named as a file, it is one line saying
what it is."""

from typer.testing import CliRunner

from mtpsim.cli import app

PR = "experiments/pr47352.toml"


def _run(*args):
    return CliRunner().invoke(app, list(map(str, args)))


def test_compare_of_a_folder_with_uncertainty_draws(tmp_path):
    assert _run("simulate", PR, "--set", "workload.num_prompts=16", "--out", tmp_path).exit_code == 0
    r = _run("simulate", PR, "--set", "workload.num_prompts=16", "--uncertainty", "2", "-j", "1",
             "--out", tmp_path)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "uncertainty.json").exists()
    r = _run("compare", tmp_path, "--json")
    assert r.exit_code == 0, r.output
    r = _run("compare", tmp_path / "uncertainty.json", tmp_path / "fresh.json")
    assert r.exit_code == 2
    assert "uncertainty.json: expected a result JSON" in r.output and "simulate --uncertainty" in r.output
