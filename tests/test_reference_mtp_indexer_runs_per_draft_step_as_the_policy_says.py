"""The MTP layer's indexer invocations per draft step, as the trace records them: `fresh` every
step, `share` and `share_recent` step 0 only, `target_share` never."""

from __future__ import annotations

import pytest
from _reference_models import prompts, run, tiny_model

EXPECTED = {"fresh": [1, 1, 1], "share": [1, 0, 0], "share_recent": [1, 0, 0],
            "target_share": [0, 0, 0]}


@pytest.mark.parametrize("policy", list(EXPECTED))
def test_indexer_calls_per_draft_step(policy):
    _, engine = run(tiny_model(), prompts(16, (5, 9, 14)), policy, k=3, max_tokens=16)
    decode_steps = [s for s in engine.trace.steps if s.num_prefills == 0 and s.num_reqs > 0]
    assert len(decode_steps) > 3
    for s in decode_steps:
        # one batched propose per decode step (none when every request just finished)
        assert s.mtp_indexer_calls in (EXPECTED[policy], [0, 0, 0])
    assert any(s.mtp_indexer_calls == EXPECTED[policy] for s in decode_steps)
    if policy != "fresh":
        assert all(s.phases["draft_decode_indexer"] == 0.0 for s in engine.trace.steps)
    else:
        assert sum(s.phases["draft_decode_indexer"] for s in engine.trace.steps) > 0
