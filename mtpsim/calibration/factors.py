"""Fit the cost model's efficiency factors to one measured row (scipy least squares).

The factors named in `[calibration] fit` are searched in log space within their bounds so that
the simulated `fit_metrics` of `fit_policy` match `[calibration.measured.<policy>]`; residuals
are relative errors. The simulation is deterministic for a given seed, so the fit is too.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.optimize import least_squares

from mtpsim.dataclass import dataclass
from mtpsim.errors import SpecError
from mtpsim.result import Result
from mtpsim.sim.simulator import simulate
from mtpsim.spec import Experiment

BOUNDS = {"mem_efficiency": (0.02, 1.0), "compute_efficiency": (0.02, 1.0),
          "comm_efficiency": (0.02, 1.0), "overhead_ms": (1e-3, 100.0),
          "eager_overhead_ms": (1e-3, 500.0), "gemm_efficiency": (0.05, 4.0)}


@dataclass(frozen=True, slots=True)
class Fit:
    """Outcome of a calibration."""

    before: dict[str, float]
    after: dict[str, float]
    measured: dict[str, float]
    simulated: dict[str, float]  # fit metrics with the fitted factors
    evaluations: int
    success: bool
    message: str
    experiment: Experiment  # with the fitted factors
    result: Result  # fit policy simulated with the fitted factors
    condition: float  # of the residuals' Jacobian in log-factor space (inf: not identifiable)

    def relative_errors(self) -> dict[str, float]:
        return {k: self.simulated[k] / v - 1.0 for k, v in self.measured.items()}


def with_factors(exp: Experiment, factors: dict[str, float]) -> Experiment:
    cal = dataclasses.replace(exp.calibration, **factors)
    return dataclasses.replace(exp, calibration=cal)


def calibrate(exp: Experiment) -> Fit:
    """Fit `exp.calibration.fit` to the measured row; raises SpecError if there is nothing to fit."""
    c = exp.calibration
    if not c.fit:
        raise SpecError(exp.source, "calibration.fit", "expected at least one factor to fit")
    row = c.measured.get(c.fit_policy)
    if row is None:
        raise SpecError(exp.source, f"calibration.measured.{c.fit_policy}",
                        f"missing; expected a [calibration.measured.{c.fit_policy}] table of "
                        f"the row to fit, with its {', '.join(c.fit_metrics)} (vLLM's metric "
                        "keys, as experiments/pr47352.toml has)")
    measured = {m: float(row[m]) for m in c.fit_metrics}
    names = list(c.fit)
    before = {n: float(getattr(c, n)) for n in names}
    lo = np.log([BOUNDS[n][0] for n in names])
    hi = np.log([BOUNDS[n][1] for n in names])
    # Start well inside the bounds: the trust region scales the gradient by the distance to a
    # bound, so a start on one (overhead_ms = 0, an efficiency of 1) ends the fit at once.
    margin = 0.05 * (hi - lo)
    start = np.clip([before[n] for n in names], np.exp(lo), np.exp(hi))  # 0 has no logarithm
    x0 = np.clip(np.log(start), lo + margin, hi - margin)
    cache: dict[tuple[float, ...], Result] = {}

    def run(x: np.ndarray) -> Result:
        key = tuple(np.round(x, 12))
        if key not in cache:
            cache[key] = simulate(with_factors(exp, dict(zip(names, np.exp(x), strict=True))),
                                  c.fit_policy)
        return cache[key]

    def residuals(x: np.ndarray) -> np.ndarray:
        r = run(x)
        return np.array([float(r.metrics[m]) / v - 1.0 for m, v in measured.items()])

    # Searched as u = x - lo (>= 0): scipy's relative finite-difference step is ~1e-8 at x = 0
    # (a factor of exactly 1), too small to move a simulated metric, which ended fits there.
    sol = least_squares(lambda u: residuals(u + lo), x0 - lo, bounds=(0.0 * lo, hi - lo),
                        diff_step=0.02, xtol=1e-4, ftol=1e-6, max_nfev=60)
    sol.x = sol.x + lo
    after = {n: float(v) for n, v in zip(names, np.exp(sol.x), strict=True)}
    best = run(sol.x)
    sv = np.linalg.svd(np.atleast_2d(sol.jac), compute_uv=False)
    condition = float(sv[0] / sv[-1]) if sv.size and sv[-1] > 0 else float("inf")
    return Fit(before, after, measured, {m: float(best.metrics[m]) for m in measured},
               len(cache), bool(sol.success), str(sol.message), with_factors(exp, after), best,
               condition)


def identifiable(fit: Fit, limit: float = 100.0) -> bool:
    """Whether the fitted factors are pinned by the metrics (one factor always is, if it moves
    them at all); a large condition number means the metrics cannot tell the factors apart."""
    return len(fit.after) == 1 or fit.condition < limit
