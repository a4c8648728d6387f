"""The forecaster's score: coverage at 50/80/90/95 % three ways (model alone, + the run's own
noise, + measured machine drift on levels), the share above the median, the interval score
beside a leave-one-out-mean and a zero-effect baseline, and deltas too noisy to test left out."""

from __future__ import annotations

import numpy as np
import pytest

from mtpsim.uncertainty.scoring import LEVELS, Scored, interval_score, report, z_of

QS = sorted({0.5, *((1 - L) / 2 for L in LEVELS), *((1 + L) / 2 for L in LEVELS)})


def _normal(config: str, mu: float, sd: float, real: float, **kw) -> Scored:
    return Scored(config, kw.pop("what", "fresh"), kw.pop("metric", "output_throughput"), real,
                  {round(q, 6): mu + sd * z_of(2 * q - 1) if q > 0.5 else
                   (mu - sd * z_of(1 - 2 * q) if q < 0.5 else mu) for q in QS}, **kw)


@pytest.mark.slow  # 2,000 predictions; quadratic, ~8 CPU s
def test_calibrated_predictions_cover_at_their_nominal_levels():
    rng = np.random.default_rng(0)
    vals = [_normal(f"c{i}", 10.0, 1.0, float(10 + rng.normal())) for i in range(2000)]
    rep = report(vals)
    for L in LEVELS:
        assert rep["all"]["coverage"]["model"][f"{round(100 * L)}"] == pytest.approx(L, abs=0.03)
    assert rep["all"]["above_median"] == pytest.approx(0.5, abs=0.04)


def test_run_noise_and_drift_widen_the_right_values():
    level = _normal("a", 10.0, 1.0, 12.5, measurement_se=1.0, drift_sd=1.5)
    delta = _normal("a", 2.0, 1.0, 4.2, measurement_se=0.5, drift_sd=1.5, delta=True, what="share - fresh")
    assert not level.covered(0.9) and not level.covered(0.9, "+ run noise")
    assert level.covered(0.9, "+ machine drift")
    assert delta.interval(0.9, "+ machine drift") == delta.interval(0.9, "+ run noise")  # paired


def test_a_delta_whose_noise_exceeds_half_its_effect_is_untestable():
    weak = _normal("a", 0.1, 0.05, 0.0, measurement_se=0.2, delta=True, what="share - fresh")
    strong = _normal("b", 1.0, 0.2, 1.1, measurement_se=0.2, delta=True, what="share - fresh")
    rep = report([weak, strong])
    assert [u["config"] for u in rep["untestable_deltas"]] == ["a"] and rep["deltas"]["n"] == 1


def test_interval_score_and_baselines():
    assert interval_score(0, 2, 1) == 2 and interval_score(0, 2, 3, 0.9) == pytest.approx(2 + 20)
    vals = [_normal(f"c{i}", float(i), 0.5, float(i) + 0.1, metric="median_tpot_ms") for i in range(6)]
    rep = report(vals)
    s = rep["interval_score"]
    assert s["model"]["levels"] < s["loo_mean"]["levels"]  # the configs differ; the model knows how
    assert s["zero_effect"]["levels"] is None
