"""The calibration fits recover the parameters synthetic traces were drawn from."""

import numpy as np
import pytest
from _synthetic_traces import (
    ATTENTION_PER_CALL,
    COST,
    CTX_REF,
    K_DRAFT,
    KAPPA,
    OVERLAP_U,
    SIGMA,
    TOPK,
    B,
    make_trace,
    true_overlap,
)

from mtpsim.calibration.fit import fit_traces, step_quantities
from mtpsim.models.acceptance import fitted_overlap
from mtpsim.models.cost import KEY_FEATURES


@pytest.fixture(scope="module")
def fitted():
    traces = [make_trace("fresh", 1, n_requests=160), make_trace("share", 2, n_requests=160)]
    cal = fit_traces(traces, ["fresh.trace.jsonl", "share.trace.jsonl"])
    return cal, None  # its speed: benchmarks/bench_trace_fit.py


def test_acceptance_curves_per_position_are_recovered(fitted):
    cal, _ = fitted
    base = np.asarray(cal.acceptance.base)
    shift = np.log(cal.acceptance.context_ref / CTX_REF)  # b0 is quoted at the fit's own L_ref
    b0_true = B[:, 0] + B[:, 1] * shift
    assert np.allclose(base[:, 0], b0_true, atol=0.25)
    assert np.allclose(base[:, 1], B[:, 1], atol=0.2)


def test_request_spread_and_overlap_to_acceptance_mapping_are_recovered(fitted):
    cal, _ = fitted
    assert cal.acceptance.sigma == pytest.approx(SIGMA, abs=0.2)
    assert cal.acceptance.kappa == pytest.approx(KAPPA, rel=0.35)


def test_overlap_per_draft_step_follows_the_generating_curve(fitted):
    cal, _ = fitted
    ctx = np.array([200.0, 600.0, 1400.0])
    for step in range(1, K_DRAFT):
        pred = fitted_overlap(cal, "share", ctx, step, TOPK)
        true = [true_overlap(c, step) for c in ctx]
        assert np.allclose(pred, true, atol=1e-3)
        assert np.allclose(cal.overlap.policies["share"][step - 1], OVERLAP_U[step - 1], atol=0.05)


def test_phase_cost_coefficients_are_recovered_with_r2_near_one(fitted):
    cal, _ = fitted
    for phase, true in COST.items():
        fit = cal.cost.phases[phase]
        got = dict(zip(fit.features, fit.coef, strict=True))
        for name, value in got.items():
            assert value == pytest.approx(true.get(name, 0.0), rel=1e-3, abs=1e-9), (phase, name)
        assert fit.r2 > 0.999 or np.isnan(fit.r2)
    assert cal.cost.gap_s == pytest.approx(1e-4, rel=0.05)


def test_prompt_lengths_are_reconstructed_from_first_verifications():
    tr = make_trace("fresh", 3, n_requests=12, conc=3)
    q, _ = step_quantities(tr)
    firsts = {}
    for j, st in enumerate(tr.steps):
        for r in st.requests:
            firsts.setdefault(r.id, (j, r.context_len - 1))
    expected = np.zeros(len(tr.steps))
    for j, plen in firsts.values():
        expected[j - 1] += plen
    assert np.array_equal(q.prefill_tokens, expected)
    assert q.prefill_done.sum() == 12


def test_per_key_cost_comes_from_the_traced_attention_and_prices_another_topk(fitted):
    """One top-k in the traces: the recorded attention seconds split per-row from per-key work,
    so moving to top-k 128 adds exactly the per-key price of the extra 64 keys per row."""
    from mtpsim.models.cost import StepShape
    from mtpsim.models.fitted import FittedCost

    cal, _ = fitted
    att = cal.cost.report["attention"]
    assert set(att) == {"prefill", "verify", "draft_prefill", "draft_decode_rest"}
    for phase in ("verify", "draft_prefill", "draft_decode_rest"):  # the attention's fixed cost
        assert att[phase]["us_per_call"] == pytest.approx(1e6 * ATTENTION_PER_CALL, rel=1e-3)
        assert att[phase]["ns_per_key"] == pytest.approx(1e9 * COST[phase]["row_keys"], rel=1e-3)
    shape = StepShape(prefill_tokens=1000, prefill_done=1, prefill_pairs=1000 * 1001 / 2)
    at = {k: float(FittedCost(cal, "fresh", K_DRAFT, k).step(shape)["prefill"]) for k in (64, 128)}
    assert at[128] - at[64] == pytest.approx(COST["prefill"]["token_keys"] * 64 * 1000, rel=1e-3)


def test_without_attention_timings_one_topk_prices_all_row_work_per_key():
    """The per-row twin of a per-key feature is collinear with it at one top-k: it is left out."""
    traces = [make_trace("fresh", 1, attention=False), make_trace("share", 2, attention=False)]
    cal = fit_traces(traces)
    assert cal.cost.report["attention"] == {}
    for phase, (key, row, _) in KEY_FEATURES.items():
        got = dict(zip(cal.cost.phases[phase].features, cal.cost.phases[phase].coef, strict=True))
        assert got[row] == 0.0 and got[key] > 0, phase
