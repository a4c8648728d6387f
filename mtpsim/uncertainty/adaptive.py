"""Adaptive importance sampling of a posterior over the priors' quasi-random draws.

A draw's parameters come from a point u of the unit cube (mtpsim.uncertainty.draws.plan); its
normal scores y = Φ⁻¹(u) are N(0, I) under the priors, whatever each prior's shape. Conditioning
on measured rows weights each draw by the rows' likelihood L(y). Prior draws alone waste most
simulations where L is tiny and leave a few heavy weights, so an interval end moves with the
seed however many draws are added. Here, stage 0 draws n_0 points from the priors; every later
stage s draws n_s points from a defensive mixture

    q_s(y) = α φ(y) + (1 - α) N(y; μ_s, Σ_s),

μ_s, Σ_s the weighted mean and covariance of all normal scores so far (the Gaussian closest to
the posterior in Kullback-Leibler divergence; Σ shrunk towards I by d / (d + ESS) while the
effective draws are few). Every draw of every stage is then weighted by the balance heuristic
(deterministic-mixture multiple importance sampling; Veach & Guibas 1995, Owen & Zhou 2000):

    w_i ∝ L(y_i) φ(y_i) / Σ_s (n_s / N) q_s(y_i),

so no weight exceeds L(y_i) N / (α N_later + n_0) times the prior's (the defensive part keeps the
weights' variance finite; Hesterberg 1995). The Monte Carlo SE of a weighted quantile is the
delta method of self-normalised importance sampling (Glynn 1996): sqrt(Σ w̃_i² (1{x_i ≤ q} - p)²)
/ f(q), f a weighted kernel density at q. No part of this module simulates: `mtpsim.uncertainty.
run` supplies the likelihoods, and tests supply synthetic ones with known answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mtpsim.dataclass import dataclass

DEFENSIVE = 0.2  # share of each adaptive stage drawn from the priors themselves
MIN_PILOT = 32  # prior draws a first proposal is fitted from; fewer: the prior draws alone


@dataclass(frozen=True, slots=True)
class Gaussian:
    mean: np.ndarray  # [d]
    chol: np.ndarray  # [d, d] lower Cholesky factor of the covariance

    def logpdf(self, y: np.ndarray) -> np.ndarray:
        """[n] log density at the rows of y [n, d]."""
        from scipy.linalg import solve_triangular

        r = solve_triangular(self.chol, (y - self.mean).T, lower=True)  # [d, n]
        logdet = float(np.log(np.diag(self.chol)).sum())
        return -0.5 * (r * r).sum(0) - logdet - 0.5 * y.shape[1] * math.log(2 * math.pi)

    def sample(self, u: np.ndarray) -> np.ndarray:
        """Points of the unit cube [n, d] mapped to this Gaussian (keeps a QMC design's balance)."""
        from scipy.special import ndtri

        return self.mean + ndtri(u) @ self.chol.T


def log_prior(y: np.ndarray) -> np.ndarray:
    """log N(y; 0, I) per row."""
    return -0.5 * (y * y).sum(1) - 0.5 * y.shape[1] * math.log(2 * math.pi)


def fit(y: np.ndarray, w: np.ndarray) -> Gaussian:
    """The weighted mean and covariance of the rows of y, the covariance shrunk towards I by
    d / (d + ESS): a handful of effective draws cannot pin d (d + 1) / 2 covariances."""
    w = np.asarray(w, float) / np.sum(w)
    d = y.shape[1]
    mu = w @ y
    c = (y - mu).T @ ((y - mu) * w[:, None])
    lam = d / (d + ess(w))
    cov = (1 - lam) * c + lam * np.eye(d)
    return Gaussian(mu, np.linalg.cholesky(cov + 1e-9 * np.eye(d)))


@dataclass(slots=True)
class Design:
    """The stages drawn so far: (count, proposal or None for the priors) each."""

    stages: list[tuple[int, Gaussian | None]]

    @property
    def n(self) -> int:
        return sum(k for k, _ in self.stages)

    def log_correction(self, y: np.ndarray) -> np.ndarray:
        """[n] log φ(y) - log Σ_s (n_s / N) q_s(y): what turns a likelihood into a weight."""
        lp = log_prior(y)
        if all(g is None for _, g in self.stages):
            return np.zeros(len(y))
        parts = []
        for k, g in self.stages:
            if g is None:
                parts.append(math.log(k / self.n) + lp)
            else:
                mix = np.logaddexp(math.log(DEFENSIVE) + lp, math.log(1 - DEFENSIVE) + g.logpdf(y))
                parts.append(math.log(k / self.n) + mix)
        return lp - np.logaddexp.reduce(np.stack(parts), axis=0)


def stage_points(g: Gaussian, n: int, seed: int) -> tuple[np.ndarray, int]:
    """[n, d] normal scores of one adaptive stage: round(α n) from the priors, the rest from g,
    each half a scrambled Sobol design; and how many came from the priors."""
    from scipy.special import ndtri

    from mtpsim.uncertainty.draws import sobol

    d = len(g.mean)
    n_prior = int(round(DEFENSIVE * n))
    u = sobol(n, d, seed)
    y = np.concatenate([ndtri(u[:n_prior]), g.sample(u[n_prior:])])
    return y, n_prior


def weights(loglik: np.ndarray, correction: np.ndarray) -> np.ndarray:
    """Normalised importance weights from log-likelihoods and the design's log correction."""
    lw = np.asarray(loglik, float) + correction
    w = np.exp(lw - lw.max())
    return w / w.sum()


def ess(w: np.ndarray) -> float:
    w = np.asarray(w, float)
    return float(w.sum() ** 2 / np.sum(w ** 2))


def quantile_se(x: np.ndarray, w: np.ndarray | None, p: float, q: float) -> float:
    """Delta-method Monte Carlo SE of the weighted p-quantile q of x (Glynn 1996): the SD of the
    weighted CDF at q over its density there (a weighted Gaussian kernel, Silverman's bandwidth
    at the effective sample size)."""
    x = np.asarray(x, float)
    w = np.full(len(x), 1 / len(x)) if w is None else np.asarray(w, float) / np.sum(w)
    n_eff = ess(w)
    mean = float(w @ x)
    sd = math.sqrt(max(float(w @ (x - mean) ** 2), 0.0))
    order = np.argsort(x)
    c = np.cumsum(w[order])
    iqr = float(np.interp(0.75, c, x[order]) - np.interp(0.25, c, x[order]))
    spread = min(sd, iqr / 1.349) if iqr > 0 else sd
    if spread <= 0 or n_eff < 2:
        return math.nan
    h = 0.9 * spread * n_eff ** -0.2
    dens = float(w @ np.exp(-0.5 * ((x - q) / h) ** 2)) / (h * math.sqrt(2 * math.pi))
    var_cdf = float(np.sum(w ** 2 * ((x <= q) - p) ** 2))
    return math.sqrt(var_cdf) / dens if dens > 0 else math.nan


def adapt(y: np.ndarray, loglik: np.ndarray,
          draw: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]],
          worst_se: Callable[[np.ndarray], float], target: float, cap: int, seed: int,
          min_stage: int) -> tuple[Design, np.ndarray, float]:
    """Adaptive stages after the prior draws `y` [n, d] (log-likelihoods `loglik`) until
    `worst_se(weights)` <= `target` or `cap` draws. `draw(points, stage)` evaluates a stage's
    normal scores and returns (the points as drawn, their log-likelihoods). Each stage at least
    `min_stage` draws and at most doubles them, sized by the SE's 1/sqrt(draws) law. Returns the
    design, the final weights and their worst SE."""
    design = Design([(len(y), None)])
    w = weights(loglik, design.log_correction(y))
    se = worst_se(w)
    while math.isfinite(se) and se > target and len(y) < cap:
        n = len(y)
        more = max(1, min(max(math.ceil(n * ((se / target) ** 2 - 1)), min_stage), n, cap - n))
        g = fit(y, w)
        stage = len(design.stages)
        pts, _ = stage_points(g, more, seed + 7919 * stage)
        got, ll = draw(pts, stage)
        design.stages.append((len(got), g))
        y, loglik = np.concatenate([y, got]), np.concatenate([loglik, ll])
        w = weights(loglik, design.log_correction(y))
        se = worst_se(w)
    return design, w, se
