"""A UserError raised in a sweep worker must cross the process boundary as itself: the pool
unpickles it, and one that cannot be unpickled left `mtpsim sweep -j 2` hanging. A point whose
weights do not fit its GPUs is now refused up front, naming the point, before any worker runs."""

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


def test_a_point_that_cannot_fit_stops_the_sweep_before_it_runs(tmp_path):
    exp = write_small(tmp_path)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mtpsim", "sweep", str(exp), "--set", "engine.tp=1,8", "-j", "2",
           "--out", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "--set: engine.tp: expected enough GPUs for the weights" in res.stderr
    assert "(at engine.tp=1)" in res.stderr and "Traceback" not in res.stderr
    assert not (out / "points").exists()


def test_a_file_that_cannot_fit_is_named_not_set(tmp_path):
    """A sweep with no axis (or axes that leave engine.tp alone) over a spec whose weights do not
    fit names the experiment file: it read `--set: engine.tp: ... (at )`, blaming a flag the user
    never gave, with an empty point."""
    exp = tmp_path / "tp1.toml"
    exp.write_text(write_small(tmp_path).read_text().replace("tp = 8", "tp = 1"))
    for axes in ([], ["--set", "workload.max_concurrency=1,2"]):
        res = subprocess.run([sys.executable, "-m", "mtpsim", "sweep", str(exp), "-j", "1", *axes],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert f"error: {exp}: engine.tp: expected enough GPUs for the weights" in res.stderr
        assert ("(at workload.max_concurrency=1)" in res.stderr) == bool(axes), res.stderr
        assert "(at )" not in res.stderr
