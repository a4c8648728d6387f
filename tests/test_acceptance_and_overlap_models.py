"""Acceptance: conversions, the overlap each policy keeps, the policy effect, and draws."""

import numpy as np
import pytest

from mtpsim.metrics import marginal_to_conditional
from mtpsim.models.acceptance import AcceptanceModel, draw_accepted
from mtpsim.models.overlap import OverlapParams
from mtpsim.models.overlap import overlap as _overlap
from mtpsim.spec import experiment_from_dict

PR_POS = [0.8745, 0.6010, 0.3534]


def overlap(policy: str, context, step: int, topk: int, agreement: float, step_exponent: float,
            target_agreement: float):
    return _overlap(policy, context, step, topk, OverlapParams(agreement, step_exponent, target_agreement))


def model(policy: str, **acc) -> AcceptanceModel:
    return AcceptanceModel.from_experiment(experiment_from_dict({"acceptance": acc}), policy)


def test_marginal_rates_become_conditional_by_hand():
    cond = model("fresh").conditional
    assert cond == pytest.approx([0.8745, 0.6010 / 0.8745, 0.3534 / 0.6010])
    assert cond == pytest.approx([0.8745, 0.687250, 0.588020], abs=1e-6)


def test_fresh_keeps_the_measured_rates_at_any_context():
    m = model("fresh").marginal(np.array([10, 5000, 100_000]))
    assert m == pytest.approx(np.tile(PR_POS, (3, 1)))


def test_share_at_short_context_misses_only_the_drafted_positions():
    ctx = np.array([100.0, 1000.0])
    for s in (1, 2):
        o = overlap("share", ctx, s, topk=2048, agreement=0.41, step_exponent=0.5,
                    target_agreement=0.05)
        assert o == pytest.approx(ctx / (ctx + s))
    assert overlap("share", ctx, 0, 2048, 0.41, 0.5, 0.05) == pytest.approx([1, 1])
    assert overlap("share_recent", ctx, 2, 2048, 0.41, 0.5, 0.05) == pytest.approx([1, 1])


def test_share_overlap_matches_the_public_figure_at_68k_and_falls_with_the_step():
    o1, o2 = (overlap("share", np.array([68_000.0]), s, 2048, 0.41, 0.5, 0.05)[0] for s in (1, 2))
    # r = 2048/68000 = 0.0301; phi = r + (1 - r) * 0.41 = 0.4278; o = (2047/2048) * phi
    assert o1 == pytest.approx(2047 / 2048 * (0.030118 + 0.969882 * 0.41), abs=1e-5)
    assert 0.35 <= o1 <= 0.50
    assert o2 < o1


def test_share_costs_little_at_10k_and_target_share_collapses_at_long_context():
    share = model("share").expected_marginal(10_240)
    assert share[0] == pytest.approx(PR_POS[0])
    assert 0 < PR_POS[2] - share[2] < 0.02
    target_short = model("target_share").expected_marginal(100)
    target_long = model("target_share").expected_marginal(68_000)
    assert target_short[0] > 0.8 * PR_POS[0]
    assert target_long[0] < 0.5 * PR_POS[0]
    assert target_long[2] < 0.15 * PR_POS[2]


def test_the_policy_factor_is_one_minus_the_missed_overlap_to_the_kappa():
    m = model("share", critical_entries=2.0)
    ctx = np.array([50.0])
    o = 50 / 51
    expect = np.array(PR_POS[:1] + [PR_POS[1] * (1 - (1 - o) ** 2)])
    assert m.marginal(ctx)[0, :2] == pytest.approx(expect)


def test_a_measured_policy_table_replaces_the_parametric_model():
    m = model("share", policy_rates={"share": [0.8, 0.5, 0.3]})
    assert m.marginal(np.array([68_000.0]))[0] == pytest.approx([0.8, 0.5, 0.3])


def test_draws_follow_the_marginal_rates_and_repeat_with_the_seed():
    marg = np.array([PR_POS])
    a = draw_accepted(np.random.default_rng(5), marg, 200_000)
    b = draw_accepted(np.random.default_rng(5), marg, 200_000)
    assert np.array_equal(a, b)
    freq = [(a >= i + 1).mean() for i in range(3)]
    assert freq == pytest.approx(PR_POS, abs=0.004)
    # the identity vLLM's numbers obey: 1 + accepted/drafts = 1 + sum of per-position rates
    assert 1 + a.mean() == pytest.approx(1 + sum(freq))
    assert marginal_to_conditional(freq)[1] == pytest.approx(0.6010 / 0.8745, abs=0.01)


def test_request_spread_widens_per_request_rates():
    m = model("fresh", request_sigma=1.0)
    rates = m.marginal(np.full(3, 1000.0), np.array([-1.0, 0.0, 1.0]))
    assert rates[0, 0] < rates[1, 0] < rates[2, 0]
    assert rates[0, 2] < PR_POS[2] < rates[2, 2]


def test_request_spread_keeps_vllms_draft_weighted_aggregate_at_the_input():
    m = model("fresh", request_sigma=0.8)
    z = np.random.default_rng(0).normal(0, 0.8, 400_000)
    marg = m.marginal(np.full(z.size, 1000.0), z)
    drafts = 1 / (1 + marg.sum(axis=1))
    assert drafts @ marg / drafts.sum() == pytest.approx(PR_POS, abs=0.003)
    assert model("fresh").offset == pytest.approx([0, 0, 0])
