"""The cross-fitted control-variate quantile (mtpsim.uncertainty.controlled, what `mtpsim advise`
quotes for its deltas) on a distribution with known quantiles: it lands on the truth within its
printed Monte Carlo SE at every seed, that SE is its spread over seeds (it comes from the
replicates of the same estimator, not from a formula that assumes the control works), it is
tighter than the plain RQMC estimate where the draws' parameters explain the figure, and it is
the plain estimate where they explain nothing."""

import math

import numpy as np
import pytest

from mtpsim.uncertainty.controlled import Controlled, controlled_interval
from mtpsim.uncertainty.rqmc import Pooled, inner_scores, sobol_rows
from mtpsim.uncertainty.summary import interval

R, N, M, D = 16, 16, 16, 6


def _signal(u: np.ndarray, scale: float) -> np.ndarray:
    """What the parameters carry, shaped like a roofline's: a time over an efficiency drawn
    uniform(0.3, 0.8), a log-uniform overhead, an interaction; u[:, 4:] carry nothing."""
    return scale * (3 / (0.3 + 0.5 * u[:, 0]) - 2 * np.exp(1.5 * u[:, 1]) + 4 * u[:, 2] * u[:, 3])


def _sample(seed: int, scale: float, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x_ij = signal(u_i) + tau ε_i + 0.5 z_ij: u_i the draw's point (a scrambled Sobol design
    per replicate), ε_i per-draw noise no emulator can know (as a simulation's own seed), z_ij
    the draw's inner scores."""
    xs, gs, us = [], [], []
    rng = np.random.default_rng(seed + 99)
    for r in range(R):
        u = sobol_rows(D, 0, N, seed * 1000 + r)
        z = inner_scores(0, N, M, seed * 1000 + 500 + r)[:, :, 0]
        mean = _signal(u, scale) + tau * rng.standard_normal(N)
        xs.append(mean[:, None] + 0.5 * z)
        gs.append(np.full(N, r))
        us.append(u)
    return np.concatenate(xs), np.concatenate(gs), np.concatenate(us)


def _truth(scale: float, tau: float, p: float) -> float:
    """The p-quantile of x by a large plain Monte Carlo (SE ~0.003 here)."""
    rng = np.random.default_rng(7)
    u = rng.uniform(size=(2_000_000, D))
    x = _signal(u, scale) + math.sqrt(tau ** 2 + 0.25) * rng.standard_normal(len(u))
    return float(np.quantile(x, p))


SEEDS = range(24)


@pytest.fixture(scope="module")
def explained():
    """Both estimators at every seed where the parameters carry most of the spread."""
    out = []
    for s in SEEDS:
        x, g, u = _sample(s, 1.0, tau=0.3)
        cv, plain = Controlled(x, g, u, seed=s), Pooled(x, g)
        out.append((cv.se(0.05), cv.se(0.95), plain.se(0.05), plain.se(0.95), cv.r2_at(0.05)))
    return out


def test_it_lands_on_the_truth_within_its_printed_se(explained):
    for end, p in ((0, 0.05), (1, 0.95)):
        truth = _truth(1.0, 0.3, p)
        q = np.array([r[end][0] for r in explained])
        se = np.array([r[end][1] for r in explained])
        assert np.all(np.abs(q - truth) < 4 * se), (p, q - truth, se)
        # no bias a seed-average can see: the mean error within 3 SEs of that mean
        assert abs(q.mean() - truth) < 3 * np.median(se) / math.sqrt(len(q)), (p, q.mean() - truth)
        ratio = q.std(ddof=1) / np.median(se)
        # the printed SE is the spread, not hidden; it may err large (the larger of two estimates)
        assert 0.45 < ratio < 1.6, (p, ratio)


def test_it_is_tighter_than_the_plain_estimate_when_the_parameters_explain(explained):
    assert np.median([r[4] for r in explained]) > 0.5  # the control explains most of the CDF's spread
    for cv_end, plain_end in ((0, 2), (1, 3)):
        cv = np.array([r[cv_end] for r in explained])
        plain = np.array([r[plain_end] for r in explained])
        assert np.median(cv[:, 1]) < 0.8 * np.median(plain[:, 1])  # printed SE
        assert cv[:, 0].std(ddof=1) < 0.8 * plain[:, 0].std(ddof=1)  # and the spread over seeds


def test_it_is_the_plain_estimate_where_the_parameters_explain_nothing():
    for s in range(6):
        x, g, u = _sample(s, 0.0, tau=1.0)  # per-draw noise only: nothing to emulate
        cv, plain = Controlled(x, g, u, seed=s), Pooled(x, g)
        assert cv.r2_at(0.05) < 0.2
        for p in (0.05, 0.95):
            q, se, _ = cv.se(p)
            q0, se0, _ = plain.se(p)
            assert abs(q - q0) < 0.5 * se0, (s, p, q, q0, se0)
            assert 0.7 * se0 < se < 1.5 * se0, (s, p, se, se0)  # no credit for a control that fails


def test_interval_uses_it_for_deltas_and_falls_back_where_it_cannot_be_fitted():
    x, g, u = _sample(0, 1.0, tau=0.3)
    iv = interval(x, None, 0.9, delta=True, half=0.5, groups=g, controls=u, seed=0)
    assert iv == controlled_interval(x, g, u, 0.9, 0.5, 0)
    assert 0 < iv.control_r2 <= 1 and iv.to_json()["control_r2"] == iv.control_r2
    cv = Controlled(x, g, u, seed=0)
    assert iv.lo == pytest.approx(cv.quantile(0.05)) and iv.p_pos == pytest.approx(cv.above(0.0))
    plain = interval(x, None, 0.9, delta=True, half=0.5, groups=g)
    assert math.isnan(plain.control_r2) and "control_r2" not in plain.to_json()
    # a level (no delta) stays plain; too few draws to fit, or unequal replicates: plain
    assert interval(x, None, 0.9, groups=g, controls=u) == interval(x, None, 0.9, groups=g)
    few = g < 2  # 2 replicates x 16 draws: 16 training draws for 13 coefficients
    assert controlled_interval(x[few], g[few], u[few], 0.9) is None
    assert interval(x[few], None, 0.9, delta=True, groups=g[few], controls=u[few]) == interval(
        x[few], None, 0.9, delta=True, groups=g[few])
    uneven = np.ones(len(g), bool)
    uneven[0] = False
    assert controlled_interval(x[uneven], g[uneven], u[uneven], 0.9) is None
    assert controlled_interval(np.zeros_like(x), g, u, 0.9) is None  # nothing varies
    with pytest.raises(ValueError, match="unequal"):
        Controlled(x[uneven], g[uneven], u[uneven])
