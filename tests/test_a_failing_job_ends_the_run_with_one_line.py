"""A job that raises ends the batch with one line, on one worker or two: bad input (a
UserError) as itself, anything else as a JobError naming the job and the exception; a worker
that dies without answering is a JobError too, not a hang. The command line prints either as one
red line, no traceback."""

from __future__ import annotations

import os

import pytest
from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.errors import JobError, SpecError
from mtpsim.runs.executor import run_jobs


def _fails_on_three(kind: str, x: int) -> int:
    if x == 3:
        if kind == "bug":
            raise ZeroDivisionError("division by zero\nsecond line")
        if kind == "spec":
            raise SpecError("exp.toml", "workload.input_len", "expected a positive int")
        os._exit(7)  # a worker killed without a word (kind == "die")
    return x


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bug_in_a_job_is_one_line_naming_the_job(workers):
    with pytest.raises(JobError) as e:
        list(run_jobs(_fails_on_three, list(range(6)), "bug", workers))
    assert str(e.value) == "job 4 of 6 failed: ZeroDivisionError: division by zero"


@pytest.mark.parametrize("workers", [1, 2])
def test_bad_input_in_a_job_arrives_as_itself(workers):
    with pytest.raises(SpecError) as e:
        list(run_jobs(_fails_on_three, list(range(6)), "spec", workers))
    assert e.value.message() == "exp.toml: workload.input_len: expected a positive int"


def test_a_worker_that_dies_is_an_error_not_a_hang():
    with pytest.raises(JobError, match="exit code 7"):
        list(run_jobs(_fails_on_three, list(range(6)), "die", 2))


def test_the_command_line_prints_a_job_error_as_one_line(tmp_path, monkeypatch):
    import mtpsim.sweep as sw
    from mtpsim.cli import app

    def broken(experiment, point, out):
        raise RuntimeError("simulator bug")

    monkeypatch.setattr(sw, "run_point", broken)  # inherited by forked workers
    exp = write_small(tmp_path)
    res = CliRunner().invoke(app, ["sweep", str(exp), "--set", "workload.max_concurrency=1,2",
                                   "-j", "2", "--json"])
    assert res.exit_code == 1, res.output
    lines = res.stderr.strip().splitlines()
    assert lines == [f"error: job {lines[0].split()[2]} of 2 failed: RuntimeError: simulator bug"]
