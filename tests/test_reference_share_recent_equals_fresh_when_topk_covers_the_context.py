"""With top-k >= context, `share_recent` is `fresh` exactly and `share` misses exactly the drafted
positions; with top-k far below the context the policies' selections measurably differ."""

from __future__ import annotations

from _reference_models import prompts, run, tiny_model


def test_share_recent_drafts_exactly_what_fresh_drafts():
    ps = prompts(16, (6, 13, 9), seed=7)
    fresh, e_fresh = run(tiny_model(), ps, "fresh", k=4, topk=64, temperature=1.0, seeds=[1, 2, 3])
    recent, e_recent = run(tiny_model(), ps, "share_recent", k=4, topk=64, temperature=1.0,
                           seeds=[1, 2, 3])
    assert recent == fresh
    assert e_recent.stats == e_fresh.stats
    for s in e_recent.trace.steps:
        for r in s.requests:
            assert r.overlap == [1.0] * 3


def test_share_reuses_the_last_accepted_row_which_lacks_only_the_drafted_positions():
    ps = prompts(16, (6, 13, 9), seed=7)
    _, engine = run(tiny_model(), ps, "share", k=4, topk=64)
    n_checked = 0
    for s in engine.trace.steps:
        for r in s.requests:
            # drafts proposed from the last accepted row p = context_len - 2; fresh at step s
            # selects 0..p+s (p+s+1 keys), the reused row 0..p (p+1 keys)
            p = r.context_len - 2
            assert r.overlap == [round((p + 1) / (p + 1 + s), 5) for s in (1, 2, 3)]
            n_checked += 1
    assert n_checked > 10


def test_with_a_small_topk_the_policies_select_differently():
    ps = prompts(16, (60, 70), seed=8)
    mean = {}
    for policy in ("share", "share_recent", "target_share"):
        _, engine = run(tiny_model(), ps, policy, k=3, topk=8, max_tokens=16)
        mean[policy] = engine.trace.mean_overlap()
    assert all(0 < o < 0.999 for o in mean["share"])  # type: ignore[operator]
    assert mean["share_recent"] != mean["share"]
    assert mean["target_share"] != mean["share"]
