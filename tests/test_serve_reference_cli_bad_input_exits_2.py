"""`mtpsim serve-reference` refuses bad flags and specs with one line and exit code 2, before
it builds an engine or binds a port."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


@pytest.mark.parametrize(("args", "needle"), [
    (["--policy", "luck"], "--policy: expected one of fresh"),
    (["--port", "0"], "--port: expected 1..65535"),
    (["--max-num-seqs", "0"], "--max-num-seqs: expected a positive size"),
    (["--weights", "missing.safetensors"], "--weights: expected builtin"),
    (["--set", "speculative.num_speculative_tokens=-1"], "--set: speculative.num_speculative_tokens"),
])
def test_bad_flags_are_one_line(args, needle):
    res = CliRunner().invoke(app, ["serve-reference", *args])
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output


def test_a_cuda_device_without_a_gpu_is_one_line():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    res = CliRunner().invoke(app, ["serve-reference", "--weights", "random-tiny",
                                   "--set", 'reference.device="cuda"'])
    assert res.exit_code == 2, res.output
    assert "reference.device: expected a CUDA device" in res.output


def test_weights_without_their_config_sidecar_are_one_line(tmp_path):
    weights = tmp_path / "w.safetensors"
    weights.write_bytes(b"")
    res = CliRunner().invoke(app, ["serve-reference", "--weights", str(weights)])
    assert res.exit_code == 2, res.output
    assert f"{weights}: expected its config next to it" in res.output.replace("\n", "")
