"""Randomized quasi-Monte Carlo with conditional Monte Carlo: quantiles with an honest Monte
Carlo SE from few simulations (`mtpsim advise`).

A figure is y = h(θ, z): θ the priors' parameters (each outer point costs simulations), z the
model-discrepancy scores that mtpsim.uncertainty.summary.adjust applies afterwards (cheap). So:
- **Outer:** R independent scrambles of a Sobol design over θ (randomized QMC), n points each.
- **Inner (conditional Monte Carlo):** each outer point is adjusted at M scores z of its own
  block of a scrambled Sobol design, so it contributes the distribution of y given θ, not one
  draw of it; the pooled CDF F(q) = mean of P(y <= q | θ) is smooth in θ, where QMC gains.
- **Estimate:** the p-quantile q of all R x n x M values pooled.
- **Monte Carlo SE** (the larger of two, as mtpsim.uncertainty.summary.mc_se): (a) the replicate
  CDFs at q are independent and unbiased, so SE = SD_r(F_r(q)) / sqrt(R) / f(q), f a kernel
  density of the pooled values at q (Kaplan, Li, Nakayama & Tuffin 2019, "Robust confidence
  intervals for a quantile using RQMC"; Nakayama et al. 2020, "Quantile estimation via a
  combination of conditional Monte Carlo and randomized quasi-Monte Carlo", WSC); (b) the SD of
  the R replicates' own quantiles over sqrt(R), which needs no density.
- **Effective draws:** the independent plain draws that would give the same SE,
  p (1 - p) / (f(q) SE)^2 (for weighted draws, mtpsim.uncertainty.adaptive's ESS plays this role).
Nothing here simulates; tests check it on distributions with known quantiles.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

Z_DIMS = 4  # mtpsim.uncertainty.draws.Z_NAMES


def sobol_rows(d: int, start: int, stop: int, seed: int) -> np.ndarray:
    """Rows [start, stop) of one scrambled Sobol sequence in d dimensions (an extended design
    keeps its first rows, so a later stage adds points without moving the earlier ones)."""
    from scipy.stats import qmc

    eng = qmc.Sobol(d, scramble=True, seed=seed)
    with warnings.catch_warnings():  # balance holds at powers of two; stages double
        warnings.simplefilter("ignore", UserWarning)
        if start:
            eng.fast_forward(start)
        u = eng.random(stop - start)
    return np.clip(u, 1e-6, 1 - 1e-6)


def inner_scores(start: int, stop: int, m: int, seed: int) -> np.ndarray:
    """[stop - start, m, Z_DIMS] standard normal scores: outer point j gets rows [j m, (j+1) m)
    of one scrambled Sobol sequence (each such block of a power-of-two size is a net itself)."""
    from scipy.special import ndtri

    u = sobol_rows(Z_DIMS, start * m, stop * m, seed)
    return ndtri(u).reshape(stop - start, m, Z_DIMS)


def _quantile(xs: np.ndarray, p: float) -> float:
    """numpy's default (linear) quantile of the sorted values xs."""
    h = (len(xs) - 1) * p
    j = int(math.floor(h))
    return float(xs[j] + (h - j) * (xs[min(j + 1, len(xs) - 1)] - xs[j]))


def _density(xs: np.ndarray, q: float, n_outer: int) -> float:
    """A Gaussian kernel density of the pooled sorted values xs at q; Silverman's bandwidth at
    the number of outer points (the inner values of one point are not independent draws)."""
    sd = float(xs.std())
    iqr = _quantile(xs, 0.75) - _quantile(xs, 0.25)
    spread = min(sd, iqr / 1.349) if iqr > 0 else sd
    if spread <= 0:
        return math.nan
    h = 0.9 * spread * max(n_outer, 2) ** -0.2
    near = xs[np.searchsorted(xs, q - 8 * h):np.searchsorted(xs, q + 8 * h, "right")]
    return float(np.exp(-0.5 * ((near - q) / h) ** 2).sum() / (len(xs) * h * math.sqrt(2 * math.pi)))


class Pooled:
    """The values x [n, M] of R replicates (`groups` [n]), sorted once: quantiles, CDFs and the
    Monte Carlo SE of any quantile read from it."""

    def __init__(self, x: np.ndarray, groups: np.ndarray) -> None:
        x = np.asarray(x, float)
        x = x.reshape(len(x), -1)
        groups = np.asarray(groups)
        self.n_outer = len(x)
        self.all = np.sort(x, axis=None)
        self.reps = [np.sort(x[groups == r], axis=None) for r in np.unique(groups)]

    def quantile(self, p: float) -> float:
        return _quantile(self.all, p)

    def above(self, t: float) -> float:
        """The share of values above t."""
        return 1 - np.searchsorted(self.all, t, "right") / len(self.all)

    def se(self, p: float) -> tuple[float, float, float]:
        """(q, SE, effective draws) of the p-quantile; SE NaN with fewer than 2 replicates."""
        q = self.quantile(p)
        r = len(self.reps)
        if r < 2:
            return q, math.nan, math.nan
        cdf = np.array([np.searchsorted(x, q, "right") / len(x) for x in self.reps])
        ends = np.array([_quantile(x, p) for x in self.reps])
        f = _density(self.all, q, self.n_outer)
        by_cdf = float(cdf.std(ddof=1)) / math.sqrt(r) / f if f > 0 else math.nan
        by_ends = float(ends.std(ddof=1)) / math.sqrt(r)
        se = max(by_cdf, by_ends) if not math.isnan(by_cdf) else by_ends
        eff = p * (1 - p) / (f * se) ** 2 if f > 0 and se > 0 else math.inf
        return q, se, eff


def quantile_se(x: np.ndarray, groups: np.ndarray, p: float) -> tuple[float, float, float]:
    """(q, SE, effective draws) of the p-quantile of the values x [n, M] (rows: outer points,
    `groups` [n] their replicate). SE is NaN with fewer than 2 replicates."""
    return Pooled(x, groups).se(p)


def interval_se(x: np.ndarray | Pooled, groups: np.ndarray | None, prob: float) -> tuple[float, float]:
    """(SE, effective draws) of a central `prob` interval's ends: the larger SE of the two ends,
    and the fewer effective draws."""
    pool = x if isinstance(x, Pooled) else Pooled(x, groups)
    a = (1 - prob) / 2
    lo, hi = (pool.se(p) for p in (a, 1 - a))
    ses = [s for s in (lo[1], hi[1]) if not math.isnan(s)]
    return (max(ses) if ses else math.nan), min(lo[2], hi[2])
