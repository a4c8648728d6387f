"""The penalty comparison's log score is proper: on events drawn at rate p, predicting p scores
better than predicting a penalised (lower) or unpenalised (higher) rate."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from penalty_log_score import log_scores  # noqa: E402


def test_the_true_rate_scores_best():
    rng = np.random.default_rng(0)
    y = (rng.random(20_000) < 0.4).astype(float)
    true = log_scores(y, np.full(y.size, 0.4)).mean()
    assert true > log_scores(y, np.full(y.size, 0.3)).mean()
    assert true > log_scores(y, np.full(y.size, 0.5)).mean()
    assert np.isfinite(log_scores(np.array([1.0, 0.0]), np.array([0.0, 1.0]))).all()  # clipped
