"""Conditioning draws on measured rows (`[calibration.measured]`): importance weights.

Noise model, stated: a measured timing figure (output throughput, median TPOT) is the true value
times exp(e), e ~ N(0, timing_noise_pct / 100) (one run of `vllm bench`); a measured acceptance
length is the true value plus N(0, s), s the placebo noise floor of the measured rows (the
position-0 difference between two policies whose step 0 is the same computation, as `mtpsim
compare` computes it), or `acceptance_noise`. TTFT is not conditioned on: it is the check.

Most prior draws miss a measured row by more than its noise, so a second stage draws as many
again from a normal fitted (in the priors' normal-score space) to the first stage's weighted
draws; every draw is weighted by prior / (half prior + half proposal) x likelihood (a
deterministic mixture), so the weights stay exact for the prior.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

CONDITION_METRICS = ("output_throughput", "median_tpot_ms", "spec_decode_acceptance_length")


@dataclass(frozen=True, slots=True)
class NoiseModel:
    timing_sd: float  # log scale
    acceptance_sd: float
    acceptance_source: str

    def describe(self) -> str:
        return (f"measured timings x exp(N(0, {100 * self.timing_sd:.1f} %)); acceptance length "
                f"+ N(0, {self.acceptance_sd:.4f}) ({self.acceptance_source})")


def noise_model(measured: Mapping[str, Mapping], u) -> NoiseModel:
    """`u`: UncertaintySpec. The placebo floor needs two rows of step-0-as-fresh policies."""
    if u.acceptance_noise > 0:
        return NoiseModel(u.timing_noise_pct / 100, u.acceptance_noise, "uncertainty.acceptance_noise")
    from mtpsim.compare import STEP0_AS_FRESH, ABRow, placebo_noise_floor

    rows = [r for p, r in measured.items() if p in STEP0_AS_FRESH
            and isinstance(r.get("spec_decode_per_position_acceptance_rates"), list | tuple)]
    if len(rows) >= 2:
        a = rows[0]["spec_decode_per_position_acceptance_rates"]
        b = rows[1]["spec_decode_per_position_acceptance_rates"]
        ab = [ABRow(f"pos{i}", f"pos{i}", 100 * x, 100 * y, acceptance=True)
              for i, (x, y) in enumerate(zip(a, b, strict=False))]
        floor = placebo_noise_floor(ab)
        if floor and floor["spec_decode_acceptance_length"] > 0:
            return NoiseModel(u.timing_noise_pct / 100, floor["spec_decode_acceptance_length"],
                              "placebo noise floor of the measured rows")
    return NoiseModel(u.timing_noise_pct / 100, 0.01, "assumed 0.01: no placebo pair measured")


def loglik(values: list[dict[str, dict[str, float]]], rows: Mapping[str, Mapping],
           noise: NoiseModel) -> np.ndarray:
    """Log-likelihood of the measured `rows` (policy -> metric -> value) per draw."""
    ll = np.zeros(len(values))
    for policy, row in rows.items():
        for m in CONDITION_METRICS:
            meas = row.get(m)
            if not isinstance(meas, int | float):
                continue
            sim = np.array([v[policy][m] for v in values])
            if m == "spec_decode_acceptance_length":
                r = (sim - meas) / noise.acceptance_sd
            else:
                r = np.log(sim / meas) / noise.timing_sd
            ll += -0.5 * r ** 2
    return ll


def normalized(logw: np.ndarray) -> np.ndarray:
    w = np.exp(logw - logw.max())
    return w / w.sum()


def ess(w: np.ndarray) -> float:
    return float(w.sum() ** 2 / np.sum(w ** 2))


@dataclass(frozen=True, slots=True)
class Proposal:
    mean: np.ndarray
    chol: np.ndarray

    def unit_points(self, n: int, seed: int) -> np.ndarray:
        """[n, d] points in (0, 1) whose normal scores follow this proposal."""
        from scipy.special import ndtr, ndtri

        from mtpsim.uncertainty.draws import sobol

        z = ndtri(sobol(n, self.mean.size, seed))
        return np.clip(ndtr(self.mean + z @ self.chol.T), 1e-9, 1 - 1e-9)

    def logpdf(self, z: np.ndarray) -> np.ndarray:
        d = z - self.mean
        sol = np.linalg.solve(self.chol, d.T).T
        logdet = 2 * np.sum(np.log(np.diag(self.chol)))
        return -0.5 * np.sum(sol ** 2, axis=1) - 0.5 * logdet - 0.5 * z.shape[1] * math.log(2 * math.pi)


def fit_proposal(z: np.ndarray, w: np.ndarray, inflate: float = 1.5) -> Proposal:
    """A normal over the weighted draws' scores, widened so its tails cover the posterior."""
    mean = w @ z
    d = z - mean
    cov = (d * w[:, None]).T @ d * inflate ** 2 + 0.1 * np.eye(z.shape[1])
    return Proposal(mean, np.linalg.cholesky(cov))


def std_normal_logpdf(z: np.ndarray) -> np.ndarray:
    return -0.5 * np.sum(z ** 2, axis=1) - 0.5 * z.shape[1] * math.log(2 * math.pi)
