"""TPOT of a streamed MTP response, as `vllm bench serve` computes it (vLLM 0.33.0):
`vllm/benchmarks/lib/endpoint_request_func.py:278-307` takes TTFT at the first message with a
choice, one ITL per later such message (an MTP step's 1 + accepted tokens arrive as one), the
latency at the last one, and the output tokens from the usage message; `vllm/benchmarks/serve.py:
636-657` divides latency - TTFT by those tokens - 1, not by the messages - 1, and without usage
counts the text's tokens (or 1 without a tokenizer), never the messages. The simulator's
metrics (`mtpsim.metrics.latency_metrics`) and the real-mode client (`mtpsim.client`) are pinned to
that on hand-made streams of 1, 2, 2 and 1 tokens a message."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mtpsim.metrics import latency_metrics


def test_tpot_of_a_hand_made_mtp_stream_divides_by_its_tokens():
    # sent at 0; messages at 0.5 s (1 token), 0.6 (2), 0.8 (2), 0.9 (1): 6 tokens, 3 ITLs
    m = latency_metrics(np.array([10]), np.array([6]), np.array([0.0]), np.array([0.5]),
                        np.array([0.9]), np.array([0.1, 0.2, 0.1]), np.array([1, 1, 1]), 0.9)
    assert m["median_ttft_ms"] == pytest.approx(500.0)
    assert m["median_tpot_ms"] == pytest.approx(400.0 / 5)  # not 400 / 3 (one per message)
    assert m["mean_itl_ms"] == pytest.approx(400.0 / 3)  # one ITL per message
    assert m["median_e2el_ms"] == pytest.approx(900.0)
    assert m["total_output_tokens"] == 6


aiohttp = pytest.importorskip("aiohttp")

from mtpsim.client.bench import BenchConfig, run_benchmark  # noqa: E402
from mtpsim.client.loopback import Loopback  # noqa: E402
from mtpsim.client.workload import BenchRequest  # noqa: E402


def _run(server: Loopback, n_tokens: int, backend: str, **cfg):
    async def go():
        url = await server.start()
        try:
            return await run_benchmark(BenchConfig(base_url=url, model="m", progress=False,
                                                   backend=backend, **cfg),
                                       [BenchRequest(n_tokens, prompt="ab", input_len=2)])
        finally:
            await server.stop()
    return asyncio.run(go())


@pytest.mark.parametrize("backend", ["openai", "openai-chat"])
def test_client_counts_an_mtp_streams_tokens_from_usage_not_its_messages(backend):
    out = _run(Loopback(interval_s=0.005, chunk_tokens=(1, 2, 2, 1)), 6, backend)
    (r,) = out.records()
    assert r.output_len == 6 and len(r.itl_s) == 3  # 4 messages: TTFT and 3 ITLs
    res = out.to_result(mode="reference", policy="fresh")
    assert res.get("median_tpot_ms") == pytest.approx(1000 * (r.finish_s - r.first_token_s) / 5)
    assert res.get("total_output_tokens") == 6


@pytest.mark.parametrize("backend", ["openai", "openai-chat"])
def test_without_usage_the_client_counts_the_texts_tokens_or_one_as_vllm(backend):
    server = Loopback(interval_s=0.002, chunk_tokens=(1, 2, 2, 1), usage=False)
    (r,) = _run(server, 6, backend, count_tokens=len).records()  # one "x" per token
    assert r.output_len == 6
    server = Loopback(interval_s=0.002, chunk_tokens=(1, 2, 2, 1), usage=False)
    (r,) = _run(server, 6, backend).records()  # no tokenizer: vLLM's 1, so no TPOT
    assert r.output_len == 1 and r.tpot_s is None and len(r.itl_s) == 3


def test_vllms_own_client_and_metrics_read_the_same_stream_the_same_way():
    serve = pytest.importorskip("vllm.benchmarks.serve")
    from vllm.benchmarks.lib import endpoint_request_func as erf

    async def go():
        server = Loopback(interval_s=0.005, chunk_tokens=(1, 2, 2, 1))
        url = await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                return await erf.async_request_openai_completions(erf.RequestFuncInput(
                    prompt="ab", api_url=url + "/v1/completions", prompt_len=2, output_len=6,
                    model="m"), session)
        finally:
            await server.stop()
    o = asyncio.run(go())
    assert o.success and o.output_tokens == 6 and len(o.itl) == 3
    vm, _ = serve.calculate_metrics([], [o], 1.0, None, [50.0], {})
    m = latency_metrics(np.array([2]), np.array([o.output_tokens]), np.array([0.0]),
                        np.array([o.ttft]), np.array([o.latency]), np.array(o.itl),
                        np.ones(len(o.itl), np.int64), 1.0)
    for key in ("median_ttft_ms", "median_tpot_ms", "mean_itl_ms", "median_itl_ms"):
        assert m[key] == pytest.approx(getattr(vm, key), rel=1e-9), key
