"""The benchmark client times streamed chunks as `vllm bench serve` does, honours the
concurrency limit, counts failures apart, and takes spec-decode counters as /metrics deltas."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("aiohttp")

from mtpsim.client.bench import BenchConfig, run_benchmark, send_offsets  # noqa: E402
from mtpsim.client.loopback import Loopback  # noqa: E402
from mtpsim.client.workload import BenchRequest  # noqa: E402


def _run(server: Loopback, requests, **cfg):
    async def go():
        url = await server.start()
        try:
            return await run_benchmark(BenchConfig(base_url=url, model="m", progress=False,
                                                   **cfg), requests)
        finally:
            await server.stop()
    return asyncio.run(go())


@pytest.mark.parametrize("backend", ["openai", "openai-chat"])
def test_ttft_itl_and_output_tokens_follow_the_chunks(backend):
    server = Loopback(interval_s=0.01)
    reqs = [BenchRequest(5, prompt=[1, 2, 3], input_len=3) for _ in range(4)]
    out = _run(server, reqs, backend=backend, max_concurrency=2, num_warmups=1)
    records = out.records()
    assert len(records) == 4 and out.num_failed == 0
    for r in records:
        assert r.output_len == 5
        # One ITL per later chunk, even when TCP hands the client several chunks at once.
        assert len(r.itl_s) == 4 and all(x >= 0 for x in r.itl_s)
        assert r.e2el_s >= 0.04  # the server spaced the five chunks 10 ms apart
        assert r.first_token_s >= r.arrival_s
        assert r.finish_s - r.first_token_s == pytest.approx(sum(r.itl_s), abs=1e-6)
    # Two at a time: the third request starts only when one of the first two has finished.
    starts = sorted(r.arrival_s for r in records)
    ends = sorted(r.finish_s for r in records)
    assert starts[2] >= ends[0] - 1e-3
    # Warm-up traffic happened before the first scrape: the delta has only the 20 chunks.
    assert out.counters is not None and out.counters.num_drafts == 20
    res = out.to_result(mode="reference", policy="share")
    assert res.get("completed") == 4 and res.get("total_output_tokens") == 20
    assert res.get("spec_decode_num_drafts") == 20


def test_failed_requests_are_counted_not_measured():
    out = _run(Loopback(fail_every=3), [BenchRequest(4, prompt="ab") for _ in range(6)],
               backend="openai-chat")
    assert out.num_failed == 2
    assert len(out.records()) == 4
    assert out.to_result(mode="vllm", policy="fresh").get("failed") == 2
    assert all("HTTP 500" in e for e in out.errors)


def test_poisson_arrivals_have_the_requested_mean_rate():
    gaps = send_offsets(20_000, request_rate=4.0, burstiness=1.0, seed=1)
    assert gaps[-1] / len(gaps) == pytest.approx(0.25, rel=0.03)
    assert not send_offsets(3, float("inf"), 1.0, 0).any()


def test_arrivals_end_at_n_over_rate_as_vllm_bench_rescales_them():
    offsets = send_offsets(50, request_rate=2.0, burstiness=0.5, seed=3)
    assert offsets[-1] == pytest.approx(25.0, rel=1e-12)
    assert offsets[0] > 0 and (offsets[1:] >= offsets[:-1]).all()
