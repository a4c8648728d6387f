"""Every delta interval carries the Monte Carlo SE of its ends (a bootstrap over the draws): it
matches the textbook SE of a sample quantile, and shrinks as draws are added."""

from __future__ import annotations

import math

import numpy as np

from mtpsim.uncertainty.summary import interval, mc_se


def test_the_se_of_a_normal_sample_quantile():
    x = np.random.default_rng(0).normal(size=400)
    theory = math.sqrt(0.05 * 0.95 / 400) / (math.exp(-1.645 ** 2 / 2) / math.sqrt(2 * math.pi))
    assert 0.6 * theory < mc_se(x, None, 0.9) < 1.5 * theory


def test_more_draws_a_smaller_se_and_it_rides_on_every_delta():
    rng = np.random.default_rng(1)
    small, big = mc_se(rng.normal(size=100), None, 0.9), mc_se(rng.normal(size=1600), None, 0.9)
    assert big < 0.5 * small
    assert not math.isnan(interval(rng.normal(size=50), None, 0.9, delta=True).mc_se)
    assert math.isnan(interval(rng.normal(size=50), None, 0.9).mc_se)  # levels: not quoted as deltas


def test_equal_weights_are_no_weights():
    x = np.random.default_rng(2).normal(size=300)
    assert abs(mc_se(x, np.full(300, 0.7), 0.9) - mc_se(x, None, 0.9)) < 1e-9
