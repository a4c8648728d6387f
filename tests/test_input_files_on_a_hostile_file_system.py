"""Every reader opens its file through mtpsim.inputs: a symlink loop, an unreadable file, a
folder or a FIFO where a file is expected, a file too big, bytes that are not UTF-8 and deep
nesting all end in one line naming the file, exit code 2, never a hang or a traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim import inputs
from mtpsim.calibration.schema import read_calibration
from mtpsim.errors import UserError
from mtpsim.result import load_result
from mtpsim.spec import load_experiment
from mtpsim.trace import read_trace

READERS = {"spec": load_experiment, "trace": read_trace, "result": load_result,
           "calibration": read_calibration}
ROOT = Path(__file__).parent.parent


def _message(reader, path) -> str:
    with pytest.raises(UserError) as e:
        READERS[reader](path)
    msg = e.value.message()
    assert "\n" not in msg and str(path) in msg, msg
    return msg


@pytest.mark.parametrize("reader", READERS)
def test_a_symlink_loop(tmp_path, reader):
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    assert "expected a readable" in _message(reader, a)


@pytest.mark.parametrize("reader", READERS)
def test_a_folder(tmp_path, reader):
    assert "got a folder" in _message(reader, tmp_path)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("reader", READERS)
def test_a_fifo_does_not_hang(tmp_path, reader):
    fifo = tmp_path / "exp.toml"
    os.mkfifo(fifo)
    assert "not a regular file" in _message(reader, fifo)


@pytest.mark.parametrize("reader", READERS)
def test_an_unreadable_file(tmp_path, reader, monkeypatch):
    """Root reads any file whatever its mode, so the refusal is injected where the file opens."""
    target = tmp_path / "secret"
    target.write_text("{}")
    real_open = os.open

    def deny(path, *a, **kw):
        if Path(path) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(inputs.os, "open", deny)
    assert "Permission denied" in _message(reader, target)


@pytest.mark.parametrize("reader", READERS)
def test_a_file_over_the_size_bound(tmp_path, reader, monkeypatch):
    big = tmp_path / "big"
    big.write_bytes(b" " * (3 * inputs.MiB))
    monkeypatch.setattr(inputs, "read_text", _bounded(inputs.read_text, 2 * inputs.MiB))
    for module in ("mtpsim.spec.experiment", "mtpsim.trace", "mtpsim.result",
                   "mtpsim.calibration.schema"):
        monkeypatch.setattr(sys.modules[module], "read_text",
                            _bounded(inputs.read_text, 2 * inputs.MiB))
    assert "at most 2 MiB" in _message(reader, big)


def _bounded(read_text, limit):
    return lambda path, error, what, max_bytes: read_text(path, error, what, min(max_bytes, limit))


@pytest.mark.parametrize("reader", READERS)
def test_bytes_that_are_not_utf8(tmp_path, reader):
    p = tmp_path / "bin"
    p.write_bytes(b"\xff\xfe\x00garbage")
    assert "UTF-8" in _message(reader, p)


def test_deeply_nested_toml_and_set_values(tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert "nested" in _message("spec", exp)
    exp.write_text('description = "ok"\n')
    with pytest.raises(UserError) as e:
        load_experiment(exp, ["acceptance.per_position=" + "[" * 5000 + "]" * 5000])
    assert "nested" in e.value.message() and "--set" in e.value.message()


@pytest.mark.timeout(60)
def test_a_fifo_as_the_experiment_on_the_command_line(tmp_path):
    fifo = tmp_path / "exp.toml"
    os.mkfifo(fifo)
    p = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", str(fifo)], cwd=ROOT,
                       capture_output=True, text=True, timeout=50)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "not a regular file" in p.stderr


@pytest.mark.parametrize("sidecar, tensors, needle", [
    ('{"config": {"bogus": 1}}', b"", "config"),
    ('{"config": 3}', b"", "config"),
    ("[1]", b"", "expected a JSON object"),
    ("{", b"", "expected JSON"),
    (None, b"not safetensors at all", "expected safetensors weights"),
])
def test_reference_weights_that_are_not_weights(tmp_path, sidecar, tensors, needle):
    from mtpsim.engine import weights

    path = tmp_path / "w.safetensors"
    path.write_bytes(tensors)
    side = sidecar if sidecar is not None else (weights.BUILTIN.with_suffix(".json")).read_text()
    path.with_suffix(".json").write_text(side)
    with pytest.raises(UserError) as e:
        weights.load(path)
    assert needle in e.value.message() and "\n" not in e.value.message(), e.value.message()


@pytest.mark.timeout(30)
def test_an_advise_deployment_file_is_read_like_a_spec(tmp_path):
    from mtpsim.uncertainty.advise import load_deployment

    fifo = tmp_path / "deploy.toml"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="not a regular file"):
        load_deployment(fifo)
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UserError, match="nested"):
        load_deployment(deep)
