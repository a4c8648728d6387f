"""The model-discrepancy term: context extrapolation of a trace-fitted acceptance model widens
steeply, a near-zero policy effect widens additively outside the range (but not where the
policies cannot differ), timings follow the adjusted acceptance, and a calibration's context range
covers the span its runs were set up to draw from."""

import math

import numpy as np
import pytest

from mtpsim.spec.sections import UncertaintySpec
from mtpsim.uncertainty.coverage import Scored, report, with_run_noise
from mtpsim.uncertainty.domain import Extrapolation
from mtpsim.uncertainty.draws import Draw
from mtpsim.uncertainty.intervals import Interval
from mtpsim.uncertainty.summary import Spread, adjust

U = UncertaintySpec()
AL = "spec_decode_acceptance_length"


def _ext(**axes: float) -> Extrapolation:
    return Extrapolation(sum(axes.values()), False, tuple(axes), dict(axes))


def test_context_counts_steeper_only_for_an_acceptance_model_fitted_to_traces():
    k_only = Spread.of(_ext(k=1.0), U, calibrated=True, fitted_acceptance=True)
    ctx = Spread.of(_ext(context=1.0), U, calibrated=True, fitted_acceptance=True)
    rows = Spread.of(_ext(context=1.0), U, calibrated=True, fitted_acceptance=False)
    assert ctx.accept == pytest.approx(math.hypot(1.0, U.context_acceptance_extrapolation_pct) / 100)
    assert ctx.accept > 5 * k_only.accept
    assert rows.accept == pytest.approx(k_only.accept)  # measured rows: every axis alike
    assert ctx.effect_accept == pytest.approx(U.context_effect_acceptance_extrapolation_pct / 100)
    assert Spread.of(_ext(), U, calibrated=True, fitted_acceptance=True).effect_accept == 0
    assert rows.effect_accept == 0  # the priors' draws carry a roofline's effect


def _draws(n: int = 400) -> list[Draw]:
    rng = np.random.default_rng(0)
    return [Draw(i, i, {}, {}, {z: float(rng.standard_normal()) for z in
                                ("z_time", "z_time_policy", "z_accept", "z_accept_policy")})
            for i in range(n)]


def _raw(share_al: float) -> dict:
    return {"fresh": {"output_throughput": 100.0, "median_tpot_ms": 10.0, AL: 2.5},
            "share": {"output_throughput": 100.0, "median_tpot_ms": 10.0, AL: share_al}}


def test_an_identical_simulated_effect_widens_outside_the_range_but_not_at_k1():
    spread = Spread.of(_ext(k=1.0, context=0.5), U, calibrated=True, fitted_acceptance=True)
    deltas = np.array([(v := adjust(_raw(2.5), d, spread, "fresh", 4))["share"][AL] - v["fresh"][AL]
                       for d in _draws()])
    # additive SD (8 % per unit + 15 % per octave of context) x (AL - 1) x 3/4 of the steps reused
    sd = (0.08 * 1.0 + 0.15 * 0.5) * 1.5 * 0.75
    assert np.std(deltas) == pytest.approx(sd, rel=0.15)
    at_k1 = [adjust(_raw(2.5), d, spread, "fresh", 1) for d in _draws(50)]
    assert all(v["share"][AL] == v["fresh"][AL] for v in at_k1)
    inside = Spread.of(_ext(), U, calibrated=True, fitted_acceptance=True)
    assert all(adjust(_raw(2.5), d, inside, "fresh", 4)["share"][AL]
               == adjust(_raw(2.5), d, inside, "fresh", 4)["fresh"][AL] for d in _draws(50))


def test_throughput_and_tpot_follow_the_adjusted_acceptance_length():
    spread = Spread(0.0, 0.2, 0.0, 0.0)  # acceptance level only
    for d in _draws(20):
        out = adjust(_raw(2.5), d, spread, "fresh", 4)["fresh"]
        ratio = out[AL] / 2.5
        assert out["output_throughput"] == pytest.approx(100.0 * ratio)
        assert out["median_tpot_ms"] == pytest.approx(10.0 / ratio)
        assert out[AL] >= 1.0


def test_a_calibration_covers_the_context_span_its_runs_drew_from():
    from mtpsim.calibration.schema import Calibration
    from mtpsim.calibration.traces import with_trace_meta
    from mtpsim.trace_records import TraceMeta

    class Tr:
        def __init__(self, rng):
            self.meta = TraceMeta(context_range=rng, temperature=1.0)

    import dataclasses

    fields = {f.name: None for f in dataclasses.fields(Calibration)}
    cal = Calibration(**{**fields, "ranges": {"context_len": [301.0, 1879.0], "k": [4.0]},
                         "machine": {}, "bootstrap": []})
    out = with_trace_meta(cal, [Tr([256.0, 1888.0]), Tr([256.0, 1888.0])])
    assert out.ranges["context_len"] == [256.0, 1888.0]
    assert with_trace_meta(cal, [Tr("bad")]).ranges["context_len"] == [301.0, 1879.0]


def test_headline_coverage_counts_run_noise_but_reports_the_models_width():
    iv = Interval(100.0, 98.0, 102.0)
    row = Scored("c", "fresh", "output_throughput", 103.5, iv, True, 0.1)
    noisy = with_run_noise(row, 2.0)  # half-width sqrt(2^2 + (1.645 x 2)^2) = 3.85
    assert not row.covered and noisy.covered
    rep = report([noisy], model_rows=[row])
    assert rep["covered"] == 1
    assert rep["inside"]["output_throughput"]["median_half_width_pct"] == pytest.approx(2.0)
    assert report([noisy])["inside"]["output_throughput"]["median_half_width_pct"] > 3.0
