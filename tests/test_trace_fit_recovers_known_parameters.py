"""The calibration fits recover the parameters synthetic traces were drawn from."""

import time

import numpy as np
import pytest
from _synthetic_traces import (
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
from mtpsim.calibration.models import fitted_overlap


@pytest.fixture(scope="module")
def fitted():
    traces = [make_trace("fresh", 1, n_requests=160), make_trace("share", 2, n_requests=160)]
    t0 = time.perf_counter()
    cal = fit_traces(traces, ["fresh.trace.jsonl", "share.trace.jsonl"])
    return cal, time.perf_counter() - t0


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


def test_fit_takes_seconds_not_minutes(fitted):
    assert fitted[1] < 20


def test_per_row_cost_scales_with_the_attended_keys_of_another_topk(fitted):
    from mtpsim.calibration.models import FittedCost
    from mtpsim.sim.cost import StepShape

    cal, _ = fitted
    shape = StepShape(prefill_tokens=1000, prefill_done=1, prefill_pairs=1000 * 1001 / 2)
    at = {k: float(FittedCost(cal, "fresh", K_DRAFT, k).step(shape)["prefill"]) for k in (32, 64)}
    c = dict(zip(cal.cost.phases["prefill"].features, cal.cost.phases["prefill"].coef, strict=True))
    per_prompt = c["pairs"] * 1000 * 1001 / 2
    assert (at[64] - per_prompt) == pytest.approx(2 * (at[32] - per_prompt), rel=0.01)
