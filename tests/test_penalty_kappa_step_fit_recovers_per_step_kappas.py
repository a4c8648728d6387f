"""The per-step penalty (`acceptance.penalty = "kappa_step"`): its fit recovers the kappas
synthetic traces were drawn with, the simulator applies them per step, and a bad name exits 2."""

import numpy as np
import pytest
from _synthetic_traces import CTX_REF, K_DRAFT, TOPK, make_trace, true_overlap
from typer.testing import CliRunner

from mtpsim.calibration.fit import fit_traces
from mtpsim.calibration.schema import CalibrationError, calibration_from_json
from mtpsim.models.fitted import FittedAcceptance
from mtpsim.models.penalty import keep_factor, parametric

KAPPAS = (2.5, 0.7)  # a mild penalty at draft step 1 (~10 %), a strong one at step 2 (~50 %)


# The tests that recover known parameters from `cal` are `slow`: it fits 2 x 240 synthetic requests
# (~10 CPU s). The form's fit stays in the fast loop in
# test_penalty_forms_round_trip_json_and_fit_as_before.py.
@pytest.fixture(scope="module")
def cal():
    # one seed: both policies serve the same requests (prompts, lengths, request shifts), as the
    # reference engine's runs do
    traces = [make_trace("fresh", 11, n_requests=240),
              make_trace("share", 11, n_requests=240, kappa_steps=KAPPAS, overlap_noise=0.12)]
    return fit_traces(traces)


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_per_step_kappas_are_recovered_from_noisy_recorded_overlaps(cal):
    got = cal.acceptance.kappa_steps
    assert got is not None and len(got) == K_DRAFT - 1
    assert got[0] == pytest.approx(KAPPAS[0], rel=0.3)
    assert got[1] == pytest.approx(KAPPAS[1], rel=0.3)
    assert got[0] > 2 * got[1]  # the step dependence itself, not just the level


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_kappa_step_follows_the_per_position_rate_where_one_kappa_cannot(cal):
    share = cal.acceptance.report["share"]
    step = share["kappa_step"]
    for pp in step["per_position"][1:]:  # the penalised positions
        assert pp["predicted"] == pytest.approx(pp["observed"], abs=0.02), pp
    worst_one_kappa = max(abs(pp["predicted"] - pp["observed"]) for pp in share["per_position"][1:])
    assert worst_one_kappa > 0.02  # the old form misses a position
    assert step["r2"] > share["r2"]


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_the_simulator_applies_the_fitted_kappa_of_each_step(cal):
    ctx = np.array([300.0, 1200.0])
    fresh = FittedAcceptance(cal, "fresh", K_DRAFT, TOPK).conditional(ctx)
    share = FittedAcceptance(cal, "share", K_DRAFT, TOPK, penalty="kappa_step").conditional(ctx)
    assert np.allclose(share[:, 0], fresh[:, 0])
    for s in range(1, K_DRAFT):
        c = cal.overlap.policies["share"][s - 1]
        o = np.array([true_overlap(x, s) for x in ctx])
        assert abs(c[0] - [-1.0, -1.5][s - 1]) < 0.3  # the curve the fit feeds in
        expect = fresh[:, s] * keep_factor(o, cal.acceptance.kappa_steps[s - 1])
        assert np.allclose(share[:, s], expect, rtol=0.03)


@pytest.mark.slow  # fits 2 x 240 requests (see `cal`)
def test_a_file_without_kappa_steps_refuses_the_kappa_step_form_by_name(cal):
    obj = cal.to_json()
    obj["acceptance"]["kappa_steps"] = None
    old = calibration_from_json(obj, "old.json")
    FittedAcceptance(old, "share", K_DRAFT, TOPK, penalty="kappa")  # the kappa form still works
    with pytest.raises(CalibrationError, match="old.json: acceptance.kappa_steps: missing"):
        FittedAcceptance(old, "share", K_DRAFT, TOPK, penalty="kappa_step")
    obj["acceptance"]["kappa_steps"] = [1.0]  # k - 1 = 2 expected
    with pytest.raises(CalibrationError, match="acceptance.kappa_steps: expected 2 numbers"):
        calibration_from_json(obj, "bad.json")


def test_parametric_kappa_step_with_exponent_zero_is_the_kappa_form():
    assert parametric("kappa_step", 8.0, 0.0).kappa(2) == 8.0
    assert parametric("kappa_step", 8.0, -1.0).kappa(2) == 4.0
    assert parametric("kappa", 8.0, -1.0).kappa(2) == 8.0


def test_spec_penalty_changes_the_parametric_share_rates_per_step():
    from mtpsim.models.acceptance import AcceptanceModel
    from mtpsim.spec.experiment import experiment_from_dict

    raw = {"model": {"preset": "deepseek-v3.2"}, "hardware": {"preset": "h200"}}
    one = AcceptanceModel.from_experiment(experiment_from_dict(raw), "share")
    per = AcceptanceModel.from_experiment(experiment_from_dict(
        raw, overrides=["acceptance.penalty=kappa_step",
                        "acceptance.critical_step_exponent=-1.0"]), "share")
    f1, f2 = one.factors(np.array([CTX_REF * 20])), per.factors(np.array([CTX_REF * 20]))
    assert f1[0, 1] == pytest.approx(f2[0, 1])  # step 1: kappa * 1**x
    assert f2[0, 2] < f1[0, 2]  # step 2: kappa / 2, a larger penalty


def test_bad_penalty_name_exits_2_naming_the_field(tmp_path):
    from mtpsim.cli import app

    exp = tmp_path / "e.toml"
    exp.write_text('[model]\npreset = "deepseek-v3.2"\n[hardware]\npreset = "h200"\n'
                   '[acceptance]\npenalty = "mass"\n')
    res = CliRunner().invoke(app, ["simulate", str(exp)])
    assert res.exit_code == 2
    assert "acceptance.penalty" in res.output and "'kappa_step'" in res.output
    assert "Traceback" not in res.output
