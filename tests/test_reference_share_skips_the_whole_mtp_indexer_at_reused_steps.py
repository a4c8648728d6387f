"""Faithful `share` (issue #11): at draft steps >= 1 the MTP layer skips its whole indexer —
projections, key writes, scoring, top-k — as vLLM does; the positions left unwritten are
rewritten by the next draft prefill before anything reads them, so the outputs are unchanged."""

from __future__ import annotations

from dataclasses import astuple

import pytest
from _reference_models import prompts, run, tiny_model

from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine

K = 3
# Rows the MTP indexer processes per draft step, > 0 or 0, per policy (no shadow tracing).
EXPECTED = {"fresh": [True, True, True], "share": [True, False, False],
            "share_recent": [True, False, False], "target_share": [False, False, False]}


def _work_per_step(policy: str, eager: bool = False) -> tuple[list[list[tuple[int, int, int]]],
                                                            dict[str, list[int]]]:
    """-> per propose, the MTP indexer's (projected, keys written, scored) rows per draft step."""
    model = tiny_model()
    att = model.mtp.block.attention
    att.eager_index_keys = eager
    ps = prompts(16, (5, 9, 14))
    engine = SpecDecodeEngine(model, EngineConfig(num_speculative_tokens=K, index_topk=4,
                              max_num_seqs=2, max_model_len=14 + 16, policy=policy,
                              prefill_chunk=8, trace=False))
    proposes: list[list[tuple[int, int, int]]] = []
    draft = model.draft

    def counted(*args, **kw):
        before = astuple(att.work)
        out = draft(*args, **kw)
        delta = tuple(a - b for a, b in zip(astuple(att.work), before, strict=True))
        step = proposes[-1]
        if in_decode[0] or not step:  # each draft step >= 1 is one call; step 0 may be chunked
            step.append(delta)
        else:
            step[0] = tuple(a + b for a, b in zip(step[0], delta, strict=True))
        return out

    in_decode = [False]
    hooks = engine.policy
    begin, dec_begin, dec_end = hooks.on_prefill_begin, hooks.on_multi_step_decode_begin, \
        hooks.on_multi_step_decode_end

    def on_prefill_begin(n):
        proposes.append([])
        begin(n)

    def on_decode_begin(n):
        in_decode[0] = True
        dec_begin(n)

    def on_decode_end(n):
        in_decode[0] = False
        dec_end(n)

    hooks.on_prefill_begin, hooks.on_multi_step_decode_begin = on_prefill_begin, on_decode_begin
    hooks.on_multi_step_decode_end = on_decode_end
    model.draft = counted
    outs, _ = run(model, ps, policy, k=K, max_tokens=16, temperature=1.0, seeds=[1, 2, 3],
                  engine=engine)
    return proposes, outs


@pytest.mark.parametrize("policy", list(EXPECTED))
def test_indexer_work_per_draft_step(policy):
    proposes, _ = _work_per_step(policy)
    assert len(proposes) > 5
    for steps in proposes:
        assert len(steps) == K
        for s, (projected, written, scored) in enumerate(steps):
            assert projected == written  # keys are written exactly for the projected rows
            assert (scored > 0) == EXPECTED[policy][s], (policy, s, steps)
            assert (projected > 0) == EXPECTED[policy][s], (policy, s, steps)
        if policy == "fresh":  # steps >= 1: one row per running request
            assert steps[1][0] == steps[2][0] >= 1


def test_before_the_fix_share_still_projected_and_wrote_keys_at_reused_steps():
    proposes, _ = _work_per_step("share", eager=True)
    for steps in proposes:
        assert all(p > 0 and w > 0 for p, w, _ in steps)  # the old, unfaithful work
        assert [sc > 0 for _, _, sc in steps] == [True, False, False]  # but it never scored


@pytest.mark.parametrize("policy", ["share", "share_recent"])
def test_skipping_the_key_writes_changes_no_output(policy):
    """Sampled at temperature 1.0 with fixed seeds: identical tokens with and without the skipped
    key writes, so no skipped key is ever read before the next draft prefill rewrites it."""
    _, faithful = _work_per_step(policy)
    _, eager = _work_per_step(policy, eager=True)
    assert faithful == eager and sum(map(len, faithful.values())) == 3 * 16
