"""The Monte Carlo SE's row-wise interpolation gives exactly numpy's np.interp, row by row: the
bootstrap ends (and so every printed MC SE) are the same numbers the per-resample loop gave."""

import numpy as np
import pytest

from mtpsim.uncertainty.summary import interp_rows


def _rows(rng: np.random.Generator, reps: int, n: int, zeros: bool) -> tuple[np.ndarray, np.ndarray]:
    x = np.sort(rng.normal(size=(reps, n)), 1)
    w = rng.exponential(size=(reps, n))
    if zeros:  # zero weights: repeated knots, and rows whose first/last knots tie
        w[rng.random((reps, n)) < 0.3] = 0.0
        x[:, 1::3] = x[:, 0::3][:, : x[:, 1::3].shape[1]]  # repeated values
    tot = w.sum(1, keepdims=True)
    c = (np.cumsum(w, 1) - 0.5 * w) / np.where(tot > 0, tot, 1.0)
    return c, x


@pytest.mark.parametrize("zeros", [False, True])
@pytest.mark.parametrize("n", [2, 3, 17, 64])
def test_rows_equal_np_interp_bit_for_bit(n: int, zeros: bool) -> None:
    rng = np.random.default_rng(n * 2 + zeros)
    c, x = _rows(rng, 300, n, zeros)
    for q in (0.05, 0.5, 0.95, 0.0, 1.0, -0.1, 1.1, float(c[0, 0]), float(c[1, -1]), float(c[2, n // 2])):
        want = np.array([np.interp(q, c[i], x[i]) for i in range(len(c))])
        got = interp_rows(q, c, x)
        assert np.array_equal(got, want, equal_nan=True), q


def test_unweighted_knots_hit_exactly_return_the_value() -> None:
    c = np.array([[0.125, 0.375, 0.625, 0.875]])
    x = np.array([[1.0, 2.0, 4.0, 8.0]])
    assert interp_rows(0.375, c, x)[0] == 2.0 and interp_rows(0.5, c, x)[0] == 3.0
    assert interp_rows(0.01, c, x)[0] == 1.0 and interp_rows(0.99, c, x)[0] == 8.0


def test_repeated_knots_give_numpys_value_not_nan() -> None:
    """Two zero-weight draws in a row repeat a knot; at that knot the slope is 0/0 or x/0."""
    c = np.array([[0.1, 0.4, 0.4, 0.9], [0.1, 0.4, 0.4, 0.9]])
    x = np.array([[1.0, 2.0, 5.0, 8.0], [1.0, 3.0, 3.0, 8.0]])
    for q in (0.4, 0.1, 0.9, 0.25):
        want = [np.interp(q, c[i], x[i]) for i in range(2)]
        assert interp_rows(q, c, x).tolist() == want and not np.isnan(want).any()
