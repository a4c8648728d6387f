"""The L/K-scaled penalty (`acceptance.penalty = "kappa_lk"`): its fit recovers the exponent and
per-step kappas synthetic traces were drawn with, the simulator applies kappa_s (L/K / r)^gamma,
the spec's parametric form reduces to kappa_step at exponent 0, and a malformed fit is refused."""

import numpy as np
import pytest
from _synthetic_traces import K_DRAFT, LK_REF_TRUE, TOPK, make_trace, true_overlap

from mtpsim.calibration.fit import fit_traces
from mtpsim.calibration.schema import CalibrationError, calibration_from_json
from mtpsim.models.fitted import FittedAcceptance
from mtpsim.models.penalty import keep_factor, parametric

KAPPAS = (2.0, 1.0)
GAMMA = 1.0  # kappa doubles with L / K: the penalty fades at long context


# The tests that recover known parameters from `cal` are `slow`: it fits 2 x 240 synthetic requests
# (~10 CPU s). The form's fit stays in the fast loop in
# test_penalty_forms_round_trip_json_and_fit_as_before.py.
@pytest.fixture(scope="module")
def cal():
    traces = [make_trace("fresh", 5, n_requests=240),
              make_trace("share", 5, n_requests=240, kappa_steps=KAPPAS, lk_exponent=GAMMA)]
    return fit_traces(traces)


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_exponent_and_kappas_are_recovered(cal):
    lk = cal.acceptance.kappa_lk
    assert lk is not None and len(lk["kappa_steps"]) == K_DRAFT - 1
    assert lk["exponent"] == pytest.approx(GAMMA, abs=0.35)
    for s, true in enumerate(KAPPAS, 1):  # at the true reference ratio
        got = lk["kappa_steps"][s - 1] * (LK_REF_TRUE / lk["ratio_ref"]) ** lk["exponent"]
        assert got == pytest.approx(true, rel=0.35)


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_kappa_lk_follows_the_data_better_than_kappa_step(cal):
    rep = cal.acceptance.report["share"]
    assert rep["kappa_lk"]["r2"] > rep["kappa_step"]["r2"]


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_the_simulator_scales_kappa_with_context_over_topk(cal):
    lk = cal.acceptance.kappa_lk
    ctx = np.array([300.0, 1200.0])
    fresh = FittedAcceptance(cal, "fresh", K_DRAFT, TOPK).conditional(ctx)
    share = FittedAcceptance(cal, "share", K_DRAFT, TOPK, penalty="kappa_lk").conditional(ctx)
    assert np.allclose(share[:, 0], fresh[:, 0])
    for s in range(1, K_DRAFT):
        o = np.array([true_overlap(x, s) for x in ctx])
        kap = lk["kappa_steps"][s - 1] * (ctx / TOPK / lk["ratio_ref"]) ** lk["exponent"]
        assert np.allclose(share[:, s], fresh[:, s] * keep_factor(o, kap), rtol=0.03)


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_a_malformed_or_missing_fit_is_refused_by_name(cal):
    obj = cal.to_json()
    obj["acceptance"]["kappa_lk"] = {"kappa_steps": [1.0, 2.0], "exponent": "x", "ratio_ref": 8}
    with pytest.raises(CalibrationError, match="bad.json: acceptance.kappa_lk: expected"):
        calibration_from_json(obj, "bad.json")
    obj["acceptance"]["kappa_lk"] = None
    old = calibration_from_json(obj, "old.json")
    with pytest.raises(CalibrationError, match="old.json: acceptance.kappa_lk: missing"):
        FittedAcceptance(old, "share", K_DRAFT, TOPK, penalty="kappa_lk")


def test_parametric_kappa_lk_is_kappa_step_at_the_reference_ratio_or_exponent_zero():
    assert parametric("kappa_lk", 8.0, -1.0, 0.0).kappa(2, 64.0) == pytest.approx(4.0)
    assert parametric("kappa_lk", 8.0, -1.0, 1.0).kappa(2, 16.0) == pytest.approx(4.0)
    assert parametric("kappa_lk", 8.0, 0.0, 1.0).kappa(1, 32.0) == pytest.approx(16.0)
