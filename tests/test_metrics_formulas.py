"""vLLM's spec-decode and latency formulas, checked against hand-computed values."""

import math

import numpy as np
import pytest

from mtpsim.metrics import (
    SpecDecodeCounters,
    acceptance_length,
    acceptance_rate,
    conditional_to_marginal,
    counters_from_requests,
    expected_acceptance_length,
    marginal_to_conditional,
    per_position_rates,
    serving_metrics,
)
from mtpsim.request_record import RequestRecord

# The upstream PR's sharing-off row (pr47352.txt).
PR_DRAFTS, PR_DRAFT_TOKENS, PR_ACCEPTED = 185_354, 556_062, 338_992
PR_POS = [0.8745, 0.6010, 0.3534]


def pr_counters() -> SpecDecodeCounters:
    per_pos = [round(p * PR_DRAFTS) for p in PR_POS]
    return SpecDecodeCounters(PR_DRAFTS, PR_DRAFT_TOKENS, PR_ACCEPTED, per_pos)


def test_pr_row_obeys_acceptance_length_identities():
    c = pr_counters()
    assert acceptance_rate(c) * 100 == pytest.approx(60.96, abs=0.005)
    assert acceptance_length(c) == pytest.approx(2.83, abs=0.005)
    # 1 + accepted/drafts == 1 + sum of marginal per-position rates (up to the PR's rounding).
    assert acceptance_length(c) == pytest.approx(expected_acceptance_length(PR_POS), abs=1e-3)
    assert per_position_rates(c) == pytest.approx(PR_POS, abs=1e-5)


def test_marginal_and_conditional_rates_convert_both_ways():
    cond = marginal_to_conditional(PR_POS)
    assert cond == pytest.approx([0.8745, 0.6010 / 0.8745, 0.3534 / 0.6010])
    assert conditional_to_marginal(cond) == pytest.approx(PR_POS)


def test_marginal_rates_that_increase_are_rejected():
    with pytest.raises(ValueError, match="position 1"):
        marginal_to_conditional([0.5, 0.7])
    with pytest.raises(ValueError, match="position 0"):
        conditional_to_marginal([1.5])


def test_counters_count_a_position_only_when_all_earlier_ones_were_accepted():
    c = SpecDecodeCounters()
    c.add(3, 0)
    c.add(3, 2)
    c.add(3, 3)
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (3, 9, 5)
    assert c.accepted_per_pos == [2, 2, 1]
    assert acceptance_length(c) == pytest.approx(1 + 5 / 3)
    keys = c.to_bench_keys()
    assert keys["spec_decode_acceptance_rate"] == pytest.approx(100 * 5 / 9)
    assert keys["spec_decode_per_position_acceptance_rates"] == pytest.approx([2 / 3, 2 / 3, 1 / 3])


def test_counter_delta_is_after_minus_before():
    before = SpecDecodeCounters(10, 30, 20, [9, 7, 4])
    after = SpecDecodeCounters(15, 45, 27, [13, 9, 5])
    d = after.delta(before)
    assert (d.num_drafts, d.num_draft_tokens, d.num_accepted_tokens) == (5, 15, 7)
    assert d.accepted_per_pos == [4, 2, 1]


def test_empty_counters_give_nan_not_a_crash():
    assert math.isnan(acceptance_length(SpecDecodeCounters()))


def test_serving_metrics_match_hand_computed_values():
    reqs = [
        RequestRecord("a", 10, 5, arrival_s=0.0, first_token_s=0.1, finish_s=0.5,
                      itl_s=[0.1], itl_count=[4], num_drafts=2, num_draft_tokens=6,
                      num_accepted_tokens=3, accepted_per_pos=[2, 1, 0]),
        RequestRecord("b", 20, 3, arrival_s=0.0, first_token_s=0.3, finish_s=0.7,
                      itl_s=[0.2], itl_count=[2]),
    ]
    m = serving_metrics(reqs, duration_s=1.0)
    assert m["completed"] == 2 and m["total_input_tokens"] == 30 and m["total_output_tokens"] == 8
    assert m["output_throughput"] == pytest.approx(8.0)
    assert m["total_token_throughput"] == pytest.approx(38.0)
    assert m["median_ttft_ms"] == pytest.approx(200.0)
    # TPOT = (e2el - ttft) / (out - 1): a = 0.4/4 = 100 ms, b = 0.4/2 = 200 ms.
    assert m["mean_tpot_ms"] == pytest.approx(150.0)
    # ITLs: four of 100 ms and two of 200 ms.
    assert m["median_itl_ms"] == pytest.approx(100.0)
    assert m["p90_itl_ms"] == pytest.approx(np.percentile([100] * 4 + [200] * 2, 90))
    assert m["p99_e2el_ms"] == pytest.approx(np.percentile([500, 700], 99))
    c = counters_from_requests(reqs)
    assert (c.num_drafts, c.num_accepted_tokens, c.accepted_per_pos) == (2, 3, [2, 1, 0])


def test_single_token_outputs_have_no_tpot():
    r = RequestRecord("x", 4, 1, 0.0, 0.2, 0.2)
    assert r.tpot_s is None
