"""A client that dies mid-run does not leave the server behind."""

from __future__ import annotations

import pytest
from _served import server_pids, tiny_experiment

pytest.importorskip("fastapi")
pytest.importorskip("aiohttp")

import mtpsim.client.bench as bench  # noqa: E402
from mtpsim.vllm_runner.runner import ServedRun, run_served_policy  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def test_the_server_is_stopped_when_the_client_raises_mid_run(tmp_path, monkeypatch):
    exp = tiny_experiment(num_prompts=16, output_len=200)
    real_send, calls = bench.send, []

    async def send(*args, **kwargs):
        calls.append(1)
        if len(calls) == 6:  # requests 1-5 are streaming: the client breaks down
            raise RuntimeError("client died")
        return await real_send(*args, **kwargs)

    monkeypatch.setattr(bench, "send", send)
    with pytest.raises(RuntimeError, match="client died"):
        run_served_policy(exp, "fresh", run=ServedRun("reference", tmp_path))
    assert len(calls) >= 6
    assert server_pids(exp.vllm.port) == []
