"""A sweep's --out (sweep.json, points/) and a simulate or run-real --out (a result per policy) are
different folders: written into one another they mixed with exit 0, and `compare DIR` then refused
the folder. Each refuses the other's folder with one line before any work."""

from typer.testing import CliRunner

from mtpsim.cli import app

PR = "experiments/pr47352.toml"


def _run(*args):
    return CliRunner().invoke(app, list(map(str, args)))


def test_a_sweep_refuses_a_results_folder(tmp_path):
    assert _run("simulate", PR, "--set", "workload.num_prompts=8", "--out", tmp_path).exit_code == 0
    r = _run("sweep", PR, "--set", "workload.max_concurrency=1,4", "--set", "workload.num_prompts=8",
             "-j", "1", "--out", tmp_path)
    assert r.exit_code == 2 and "expected a sweep's folder or a new one" in r.output
    assert not (tmp_path / "sweep.json").exists()


def test_simulate_and_run_real_refuse_a_sweeps_folder(tmp_path):
    r = _run("sweep", PR, "--set", "workload.max_concurrency=1,4", "--set", "workload.num_prompts=8",
             "-j", "1", "--out", tmp_path)
    assert r.exit_code == 0, r.output
    for cmd in (["simulate", PR], ["run-real", "experiments/reference-cpu.toml"]):
        r = _run(*cmd, "--out", tmp_path)
        assert r.exit_code == 2 and "expected a results folder or a new one, got a sweep's" in r.output
    assert not list(tmp_path.glob("*.json"))[1:]  # sweep.json alone


def test_a_run_resumes_into_its_own_folder(tmp_path):
    for _ in range(2):
        r = _run("simulate", PR, "--set", "workload.num_prompts=8", "--out", tmp_path)
        assert r.exit_code == 0, r.output
