"""`run-real` on the reference engine checks the workload against the weights before anything
runs: `mtpsim run-real experiments/pr47352.toml` (the README's experiment, 10,240-token prompts)
used to print the stand-in note, load the model and only then fail inside the first policy; a
top-k wider than every context likewise. Now one line (exit 2), in-process and --server alike."""

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.errors import SpecError
from mtpsim.real import backend
from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("server", [False, True])
def test_the_backends_refuse_a_workload_longer_than_the_weights_positions(server):
    exp = load_experiment("experiments/pr47352.toml", ["policies=fresh"])
    with pytest.raises(SpecError, match=r"^experiments/pr47352\.toml: workload: expected prompt \+ "
                       r"output within the reference model's \d+ positions, got 12288 tokens"):
        backend("reference", server=server).refuse(exp, exp.policies)
    fits = load_experiment("experiments/reference-cpu.toml")
    backend("reference", server=server).refuse(fits, fits.policies)


def test_run_real_of_the_readme_experiment_is_one_line_and_runs_nothing(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mtpsim", "run-real", "experiments/pr47352.toml", "-p",
                        "fresh", "--out", str(tmp_path / "o")], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "workload: expected prompt + output within" in lines[0], r.stderr
    assert not list((tmp_path / "o").glob("*.json"))
