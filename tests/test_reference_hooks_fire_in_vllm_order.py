"""The engine's draft loop calls the policy's four hooks in vLLM 0.33.0's order, with num_reqs,
and under `share` the MTP layer skips its top-k exactly at draft steps >= 1."""

from __future__ import annotations

import pytest
from _reference_models import prompts, run, tiny_model

from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
from mtpsim.policies import Share


class Recorder(Share):
    """A `share` policy that records each hook and the skip flag seen at every draft forward."""

    def __init__(self, model, state, log):
        super().__init__(model, state)
        self.log = log

    def on_prefill_begin(self, num_reqs):
        self.log.append(("on_prefill_begin", num_reqs))
        super().on_prefill_begin(num_reqs)

    def on_prefill_end(self, num_reqs):
        self.log.append(("on_prefill_end", num_reqs))
        super().on_prefill_end(num_reqs)

    def on_multi_step_decode_begin(self, num_reqs):
        self.log.append(("on_multi_step_decode_begin", num_reqs))
        super().on_multi_step_decode_begin(num_reqs)

    def on_multi_step_decode_end(self, num_reqs):
        self.log.append(("on_multi_step_decode_end", num_reqs))
        super().on_multi_step_decode_end(num_reqs)


def engine_with_recorder(k: int, log: list) -> SpecDecodeEngine:
    model = tiny_model()
    engine = SpecDecodeEngine(model, EngineConfig(num_speculative_tokens=k, index_topk=4,
                                                  max_num_seqs=2, max_model_len=64, policy="share"))
    engine.policy = Recorder(model, engine, log)
    draft = model.draft

    def recording_draft(tokens, hidden, input_pos, slots, topk):
        log.append(("draft", tokens.shape[0], tokens.shape[1], model.mtp.skip_topk))
        return draft(tokens, hidden, input_pos, slots, topk)

    model.draft = recording_draft
    return engine


@pytest.mark.parametrize("k", [1, 3])
def test_each_propose_is_prefill_hooks_then_multi_step_hooks(k):
    log: list = []
    engine = engine_with_recorder(k, log)
    run(engine.model, prompts(16, (5, 9, 7)), "share", k=k, max_tokens=10, engine=engine)
    proposes, i = 0, 0
    while i < len(log):
        assert log[i][0] == "on_prefill_begin"
        n = log[i][1]
        i += 1
        while log[i][0] == "draft":  # step 0 (a long prompt may take several chunks)
            assert log[i][1] == n and log[i][3] is False
            i += 1
        assert log[i] == ("on_prefill_end", n)
        i += 1
        if k > 1:
            assert log[i] == ("on_multi_step_decode_begin", n)
            i += 1
            for _ in range(k - 1):
                assert log[i] == ("draft", n, 1, True)
                i += 1
            assert log[i] == ("on_multi_step_decode_end", n)
            i += 1
        proposes += 1
    assert proposes > 5
    assert any(entry[:2] == ("on_prefill_begin", 2) for entry in log)  # batched proposes too
