"""serve-reference's /mtpsim/indexer_counts (taken as the vLLM plugin takes them: the policy's
hooks give the draft step, forward hooks on the MTP module give forwards and indexer runs) equal
the reference engine's own per-draft-step indexer calls, over a served run with chunked draft
prefills and several concurrent requests, under both policies."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("fastapi")
torch = pytest.importorskip("torch")

from mtpsim.vllm_plugin.counts import PluginCounts  # noqa: E402

K = 3


def _engine(policy: str):
    from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
    from mtpsim.engine.model import ModelArgs, Transformer

    torch.manual_seed(0)
    model = Transformer(ModelArgs(n_layer=1, dim=32, n_head=2, intermediate_size=64,
                                  n_index_head=2, index_head_dim=8, index_topk=16,
                                  max_seq_len=256)).eval()
    cfg = EngineConfig(num_speculative_tokens=K, index_topk=16, max_num_seqs=3,
                       max_model_len=192, policy=policy, prefill_chunk=8, trace=True)
    return SpecDecodeEngine(model, cfg, seed=0)


@pytest.mark.parametrize("policy", ["fresh", "share"])
def test_served_counts_equal_the_engines_own_per_step_calls(policy):
    from fastapi.testclient import TestClient

    from mtpsim.serve_reference.app import create_app
    from mtpsim.serve_reference.loop import EngineLoop

    loop = EngineLoop(_engine(policy))
    loop.start()
    try:
        with TestClient(create_app(loop, "ref", 192)) as c:
            def send(n: int) -> None:
                r = c.post("/v1/completions", json={"prompt": "x" * (20 + 9 * n),
                                                    "max_tokens": 10 + n, "ignore_eos": True})
                assert r.status_code == 200, r.text
            threads = [threading.Thread(target=send, args=(n,)) for n in range(5)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            counts = PluginCounts.from_json(c.get("/mtpsim/indexer_counts").json())
    finally:
        loop.stop()
    engine = loop.engine
    own = [sum(s.mtp_indexer_calls[i] for s in engine.trace.steps) for i in range(K)]
    served = counts.contexts["propose"]
    assert served.indexer == own
    assert sum(own) == engine.model.mtp.indexer_calls > 0
    assert served.forwards[0] > served.forwards[1]  # chunked step-0 forwards, 8 rows each
    assert served.indexer == (served.forwards if policy == "fresh"
                              else [served.forwards[0], 0, 0])
