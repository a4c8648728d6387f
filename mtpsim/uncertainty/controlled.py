"""Quantiles of randomized-QMC draws with a cross-fitted control variate (`mtpsim advise`).

A figure is x = h(θ, z): θ the priors' parameters at a draw's point u of the unit cube (uniform
under the priors, whatever each prior's shape), z the discrepancy scores each draw is adjusted at
(mtpsim.uncertainty.rqmc: conditional Monte Carlo, M values per draw). The plain estimate of the
p-quantile inverts the pooled CDF F(t) = mean_i G_i(t), G_i(t) the share of draw i's M values at
most t. Here F is estimated with a control variate whose mean is known (Hesterberg & Nelson 1998,
"Control variates for probability and quantile estimation"; Owen, "Monte Carlo theory, methods
and examples", ch. 8):

- **Emulator.** Per draw, the mean m_i and log SD of its M values are regressed on features of
  u (u - 1/2, its squares, and the products of the six coordinates with the largest linear
  effect). The control is C_i(t) = Φ((t - m(u_i)) / s(u_i)): what draw i's CDF would be if the
  emulator were right and the inner values normal.
- **Its mean is known** because u's distribution is: E C(t) is the mean of the same function over
  a fresh scrambled Sobol sample of the cube (no simulation: the emulator is a formula).
- **Cross-fitting.** Replicate r's controls use the emulator fitted to the OTHER replicates, and
  its E C(t) a sample of its own; given that fit, replicate r's draws are independent of it, so
  T_r(t) = mean_{i in r} [G_i(t) - β C_i(t)] + β E_r C(t) is an unbiased estimate of F(t) for
  any fixed β (no in-sample optimism, however many features).
- **β** is the regression coefficient of G on C at the plain estimate of the end (clipped to
  [0, 2]): where the emulator explains nothing, β ~ 0 and the estimate is the plain one.
- **Estimate:** the root of mean_r T_r(t) = p.
- **Monte Carlo SE, from the replicates of this same estimator** (as mtpsim.uncertainty.rqmc,
  the larger of two): the SD of the R replicate CDFs T_r at the end over sqrt(R) over a kernel
  density there, and the SD of the R replicate ends (the roots of each T_r = p) over sqrt(R).
  Neither assumes the control works: a poor emulator shows up as a wide spread.
Nothing here simulates; tests check it on distributions with known quantiles.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import ndtr as _ndtr

from mtpsim.uncertainty.intervals import Interval

TOP = 6  # coordinates whose pairwise products join the emulator's features
EMULATOR_DRAWS = 512  # points of each replicate's fresh Sobol sample for E C(t)
BETA_MAX = 2.0
ROWS_PER_FEATURE = 3  # training draws per emulator coefficient, at least
_BISECT = 36  # bisection steps: a bracket of 3 spans of the values shrinks 2^36-fold


def _features(u: np.ndarray, top: list[int]) -> np.ndarray:
    c = u - 0.5
    parts = [np.ones((len(u), 1)), c, c * c - 1 / 12]
    if len(top) > 1:
        parts.append(np.stack([c[:, a] * c[:, b] for i, a in enumerate(top) for b in top[i + 1:]], 1))
    return np.hstack(parts)


def _lstsq(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares by the normal equations (a tiny ridge keeps them solvable): ~10x faster
    than an SVD at these sizes, and the fit is an emulator, not a reported estimate."""
    a = x.T @ x
    return np.linalg.solve(a + 1e-10 * np.trace(a) / len(a) * np.eye(len(a)), x.T @ y)


def n_features(d: int, top: int = TOP) -> int:
    return 1 + 2 * d + top * (top - 1) // 2


def usable(n_train: int, d: int) -> bool:
    """Enough draws to fit the emulator: at least ROWS_PER_FEATURE per coefficient of the
    linear-and-squares part (the products join only where there are that many for them too)."""
    return d > 0 and n_train >= ROWS_PER_FEATURE * n_features(d, 0)


def _fit(u: np.ndarray, mean: np.ndarray, logsd: np.ndarray) -> tuple[list[int], np.ndarray]:
    """(product coordinates, coefficients [features, 2]) of the mean and log-SD regressions."""
    d = u.shape[1]
    top: list[int] = []
    if len(u) >= ROWS_PER_FEATURE * n_features(d, min(TOP, d)):
        b = _lstsq(np.hstack([np.ones((len(u), 1)), u - 0.5]), mean)
        top = [int(j) for j in np.argsort(-np.abs(b[1:]))[:TOP]]
    return top, _lstsq(_features(u, top), np.stack([mean, logsd], 1))


@functools.lru_cache(maxsize=64)
def _sample(d: int, n: int, seed: int) -> np.ndarray:
    from mtpsim.uncertainty.rqmc import sobol_rows

    return sobol_rows(d, 0, n, seed)


class Controlled:
    """The values x [n, M] of R replicates of equal size (`groups` [n]) at the draws' unit-cube
    points `u` [n, d]: quantiles, CDFs and their Monte Carlo SEs with the cross-fitted control
    variate."""

    def __init__(self, x: np.ndarray, groups: np.ndarray, u: np.ndarray, seed: int = 0,
                 emulator_draws: int = EMULATOR_DRAWS) -> None:
        x = np.asarray(x, float)
        self.x = x.reshape(len(x), -1)
        self.groups = np.asarray(groups)
        self.labels = list(np.unique(self.groups))
        sizes = {int((self.groups == r).sum()) for r in self.labels}
        if len(sizes) != 1:
            raise ValueError(f"replicates of unequal sizes {sorted(sizes)}")
        u = np.asarray(u, float)
        d = u.shape[1]
        self.all = np.sort(self.x, axis=None)
        self.n_outer = len(self.x)
        mean = self.x.mean(1)
        floor = 1e-9 * max(float(np.abs(self.all).max()), 1.0)
        logsd = np.log(np.maximum(self.x.std(1), floor))
        # per replicate r (rows): its sorted values, and the emulated (mean, SD) at its draws and
        # at a sample of the cube of its own, both from the emulator fitted without r
        reps, m, s, ms, ss = [], [], [], [], []
        for j, r in enumerate(self.labels):
            mine = self.groups == r
            top, coef = _fit(u[~mine], mean[~mine], logsd[~mine])
            here = _features(u[mine], top) @ coef
            there = _features(_sample(d, emulator_draws, seed * 7919 + 48611 * (j + 1)), top) @ coef
            reps.append(np.sort(self.x[mine], axis=None))
            m.append(here[:, 0])
            s.append(np.exp(np.clip(here[:, 1], -700, 700)))
            ms.append(there[:, 0])
            ss.append(np.exp(np.clip(there[:, 1], -700, 700)))
        self.reps, self.m, self.s, self.ms, self.ss = map(np.array, (reps, m, s, ms, ss))
        self._beta: dict[float, tuple[float, float]] = {}

    def rep_cdfs(self, t: float | np.ndarray, beta: float) -> np.ndarray:
        """T_r(t_r) for every replicate r (t: one point, or one per replicate)."""
        t = np.broadcast_to(np.asarray(t, float), (len(self.labels),))[:, None]
        g = (self.reps <= t).mean(1)
        c = _ndtr((t - self.m) / self.s).mean(1)
        e = _ndtr((t - self.ms) / self.ss).mean(1)
        return g - beta * (c - e)

    def beta(self, t: float) -> tuple[float, float]:
        """(β, R²) of the draws' CDFs at t on their controls (the control's coefficient and how
        much of the CDFs' variance across draws it explains)."""
        if t not in self._beta:
            gi = np.concatenate([(self.x[self.groups == r] <= t).mean(1) for r in self.labels])
            ci = _ndtr((t - self.m) / self.s).ravel()
            vc, vg = float(ci.var()), float(gi.var())
            if vc <= 1e-12 or vg <= 0:
                self._beta[t] = (0.0, 0.0)
            else:
                cov = float(((gi - gi.mean()) * (ci - ci.mean())).mean())
                self._beta[t] = (min(max(cov / vc, 0.0), BETA_MAX), cov * cov / (vc * vg))
        return self._beta[t]

    def cdf(self, t: float, beta: float | None = None) -> float:
        b = self.beta(t)[0] if beta is None else beta
        return float(self.rep_cdfs(t, b).mean())

    def above(self, t: float) -> float:
        """P(value > t), clipped to [0, 1]."""
        return min(max(1 - self.cdf(t), 0.0), 1.0)

    def _roots(self, p: float, beta: float, pooled: bool) -> np.ndarray:
        """Bisection for mean_r T_r(t) = p (pooled, one root) or T_r(t) = p for every r."""
        lo, hi = float(self.all[0]), float(self.all[-1])
        span = max(hi - lo, 1e-12)
        lo_t = np.full(1 if pooled else len(self.labels), lo - span)
        hi_t = lo_t + 3 * span
        for _ in range(_BISECT):
            mid = 0.5 * (lo_t + hi_t)
            f = self.rep_cdfs(mid[0], beta).mean(keepdims=True) if pooled else self.rep_cdfs(mid, beta)
            below = f < p
            lo_t, hi_t = np.where(below, mid, lo_t), np.where(below, hi_t, mid)
        return 0.5 * (lo_t + hi_t)

    def _beta_at(self, p: float) -> float:
        """β at the plain estimate of the p-quantile."""
        from mtpsim.uncertainty.rqmc import _quantile

        return self.beta(_quantile(self.all, p))[0]

    def r2_at(self, p: float) -> float:
        """The control's R² at the plain estimate of the p-quantile."""
        from mtpsim.uncertainty.rqmc import _quantile

        return self.beta(_quantile(self.all, p))[1]

    def quantile(self, p: float) -> float:
        return float(self._roots(p, self._beta_at(p), True)[0])

    def se(self, p: float) -> tuple[float, float, float]:
        """(q, SE, effective draws) of the p-quantile; SE NaN with fewer than 2 replicates."""
        from mtpsim.uncertainty.rqmc import _density

        b = self._beta_at(p)
        q = float(self._roots(p, b, True)[0])
        r = len(self.labels)
        if r < 2:
            return q, math.nan, math.nan
        f = _density(self.all, q, self.n_outer)
        by_cdf = float(self.rep_cdfs(q, b).std(ddof=1)) / math.sqrt(r) / f if f > 0 else math.nan
        by_ends = float(self._roots(p, b, False).std(ddof=1)) / math.sqrt(r)
        se = max(by_cdf, by_ends) if not math.isnan(by_cdf) else by_ends
        eff = p * (1 - p) / (f * se) ** 2 if f > 0 and se > 0 else math.inf
        return q, se, eff


def controlled_interval(x: np.ndarray, groups: np.ndarray, u: np.ndarray, prob: float,
                        half: float = math.nan, seed: int = 0) -> Interval | None:
    """A delta's Interval (median, central `prob` ends, P(> 0), P(> half), the ends' MC SE and
    effective draws, the control's R² at the ends) with the control variate; None where it
    cannot be fitted (too few draws outside a replicate, replicates of unequal sizes, one
    replicate, or every value the same): the caller's plain estimate stands."""
    groups = np.asarray(groups)
    labels, counts = np.unique(groups, return_counts=True)
    x = np.asarray(x, float)
    if (len(labels) < 2 or len(set(counts.tolist())) != 1
            or not usable(len(groups) - int(counts[0]), np.asarray(u).shape[1])
            or float(np.ptp(x)) == 0.0):
        return None
    c = Controlled(x, groups, u, seed)
    a = (1 - prob) / 2
    lo, hi = c.se(a), c.se(1 - a)
    ses = [s for s in (lo[1], hi[1]) if not math.isnan(s)]
    r2 = min(c.r2_at(a), c.r2_at(1 - a))
    return Interval(c.quantile(0.5), lo[0], hi[0], c.above(0.0),
                    c.above(half) if not math.isnan(half) else math.nan, half,
                    max(ses) if ses else math.nan, min(lo[2], hi[2]), r2)
