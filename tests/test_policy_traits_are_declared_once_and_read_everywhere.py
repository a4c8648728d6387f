"""Each policy declares its traits once, beside its hooks; the traits agree with what the hooks
do, and the models read the traits, not the policy's name."""

from __future__ import annotations

import numpy as np
import pytest

from mtpsim import policies
from mtpsim.models.cost import StepShape
from mtpsim.models.overlap import OverlapParams, overlap
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict


class StateModel:
    """Records the selection each draft step would use, as the reference engine's MTP layer."""

    def __init__(self):
        self.skip = self.recent = self.target = self.compacted = False

    def set_skip_topk(self, skip):
        self.skip = skip

    def compact_topk_indices(self, idx):
        self.compacted = True

    def set_append_recent(self, on):
        self.recent = on

    def set_use_target_topk(self, on):
        self.target = on


class State:
    last_token_indices = [0, 1]
    num_speculative_steps = 3


def observed(name):
    """(indexer runs at step 0, at step 1, rows reused, drafted appended) from the hooks."""
    m = StateModel()
    p = policies.make_policy(name, m, State())
    p.on_prefill_begin(2)
    step0 = not m.skip and not m.target
    step0_target = m.target
    p.on_prefill_end(2)
    p.on_multi_step_decode_begin(2)
    step1 = not m.skip
    recent = m.recent
    p.on_multi_step_decode_end(2)
    rows = "" if step1 else ("target" if step0_target else "own")
    return step0, step1, rows, recent


@pytest.mark.parametrize("name", list(policies.POLICIES))
def test_declared_traits_match_the_hooks(name):
    t = policies.traits(name)
    step0, step1, rows, recent = observed(name)
    assert (t.runs_indexer(0), t.runs_indexer(1), t.later_rows, t.appends_drafted) == (
        step0, step1, rows, recent)


def test_unknown_policy_names_are_refused():
    with pytest.raises(ValueError, match="unknown policy"):
        policies.traits("sharing")
    assert policies.policies_where(lambda t: t.vllm) == ("fresh", "share")


def test_a_policy_with_shares_traits_is_modelled_as_share(monkeypatch):
    class Twin(policies.Share):
        pass

    monkeypatch.setitem(policies.POLICIES, "twin", "a copy of share under another name")
    monkeypatch.setitem(policies.POLICY_CLASSES, "twin", Twin)
    ctx = np.array([500.0, 5_000.0, 68_000.0])
    params = OverlapParams(0.41, 0.5, 0.05)
    for step in range(3):
        assert np.array_equal(overlap("twin", ctx, step, 2048, params),
                              overlap("share", ctx, step, 2048, params))
    exp = experiment_from_dict({})
    shape = StepShape(num_decode=8, decode_ctx=8 * 10_000.0, decode_keys=8 * 2048.0, num_draft=8,
                      draft_ctx=8 * 10_000.0, draft_keys=8 * 2048.0)
    twin, share = CostModel(exp, "twin").step(shape), CostModel(exp, "share").step(shape)
    fresh = CostModel(exp, "fresh").step(shape)
    assert twin == share
    assert float(twin["draft_decode_indexer"]) == 0.0 < float(fresh["draft_decode_indexer"])


def test_a_trace_of_an_unknown_policy_is_a_one_line_error(tmp_path):
    import json

    from mtpsim.errors import TraceError
    from mtpsim.trace import FORMAT, VERSION, read_trace

    p = tmp_path / "x.trace.jsonl"
    p.write_text(json.dumps({"format": FORMAT, "version": VERSION, "engine": "reference",
                             "policy": "sharing", "num_speculative_tokens": 2,
                             "index_topk": 64}) + "\n")
    with pytest.raises(TraceError, match="policy.*expected one of fresh, share"):
        read_trace(p)
