"""Speculative decoding never changes what is generated: with greedy decoding every policy's
output is exactly the target model's own one-token-at-a-time greedy output."""

from __future__ import annotations

import pytest
from _reference_models import prompts, run, target_greedy, tiny_model

from mtpsim.policies import POLICIES


@pytest.mark.parametrize("policy", list(POLICIES))
def test_batched_requests_of_different_lengths_match_the_target(policy):
    model = tiny_model()
    ps = prompts(16, (5, 19, 40, 11))
    want = {f"r{i}": target_greedy(model, p, 24, topk=4) for i, p in enumerate(ps)}
    got, engine = run(model, ps, policy, k=3, topk=4, max_tokens=24, max_num_seqs=3)
    assert got == want
    s = engine.stats
    # the drafts were really exercised: some accepted, some rejected
    assert 0 < s.num_accepted_tokens < s.num_draft_tokens


@pytest.mark.parametrize("k", [1, 2, 4])
def test_every_draft_depth_is_lossless(k):
    model = tiny_model(seed=3)
    ps = prompts(16, (7, 23), seed=4)
    want = {f"r{i}": target_greedy(model, p, 20, topk=6) for i, p in enumerate(ps)}
    got, _ = run(model, ps, "share", k=k, topk=6, max_tokens=20)
    assert got == want


def test_many_requests_finishing_in_the_same_step_keep_their_own_outputs():
    model = tiny_model(vocab=8, seed=5)
    ps = prompts(8, (3,) * 30, seed=2)
    want = {f"r{i}": target_greedy(model, p, 6, topk=8) for i, p in enumerate(ps)}
    got, _ = run(model, ps, "share", k=2, topk=8, max_tokens=6, max_num_seqs=10)
    assert got == want
