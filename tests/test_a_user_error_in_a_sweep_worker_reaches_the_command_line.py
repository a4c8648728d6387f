"""A point that validates but cannot be simulated (its weights do not fit the GPUs) raises a
SpecError inside a sweep worker; the error must cross the process boundary as itself, so the
sweep ends with the one-line message and exit code 2 instead of hanging on an exception the
pool cannot unpickle."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
from _sweep_experiment import write_small

from mtpsim.calibration.schema import CalibrationError
from mtpsim.errors import ResultError, SpecError, TraceError, UserError
from mtpsim.vllm_runner.process import ServerError


@pytest.mark.parametrize("cls", [UserError, SpecError, TraceError, ResultError,
                                 CalibrationError, ServerError])
def test_user_errors_survive_pickling(cls):
    err = cls("exp.toml", "engine.tp", "expected more GPUs")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and back.message() == err.message()


def test_a_failing_point_in_a_parallel_sweep_exits_2(tmp_path):
    exp = write_small(tmp_path)
    cmd = [sys.executable, "-m", "mtpsim", "sweep", str(exp), "--set", "engine.tp=1,8", "-j", "2"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "engine.tp: expected enough GPUs for the weights" in res.stderr
    assert "Traceback" not in res.stderr
