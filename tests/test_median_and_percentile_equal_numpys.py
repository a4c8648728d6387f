"""metrics.median and metrics.percentile, which spare a short simulate numpy's import of
numpy.ma, give np.median's and np.percentile's values bit for bit."""

from __future__ import annotations

import numpy as np

from mtpsim.metrics import median, percentile


def _arrays():
    rng = np.random.default_rng(11)
    for n in [*range(1, 12), 31, 32, 256, 1001]:
        yield rng.random(n) * 10.0 ** rng.integers(-3, 6)
        yield rng.integers(0, 5, n).astype(float)  # ties
        yield np.round(rng.normal(100, 30, n), 2)
    yield np.array([3, 1, 2], dtype=np.int64)
    yield np.array([1e308, -1e308, 5.0, 7.0])


def test_median_is_numpys_bit_for_bit():
    for a in _arrays():
        assert median(a) == float(np.median(a)), a


def test_percentile_is_numpys_bit_for_bit():
    for a in _arrays():
        for p in (0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100):
            assert percentile(a, p) == float(np.percentile(a, p)), (a, p)


def test_nan_and_empty_are_numpys():
    assert np.isnan(median(np.array([1.0, np.nan]))) and np.isnan(percentile(np.array([np.nan, 2.0]), 90))
