"""Per-position acceptance: conditional rates, the overlap -> acceptance link, and draws.

Conditional rates a_i = P(draft i accepted | drafts 0..i-1 accepted). A policy that reuses a row
multiplies each a_i by the share of the "critical" attention entries its selection keeps,
    a_i' = a_i * (1 - (1 - o_i) ** kappa_i)                             (`keep_factor`)
o_i being the overlap with the fresh selection at draft step i (mtpsim.models.overlap) and
kappa_i one kappa for every step (`penalty = "kappa"`), one per step (`"kappa_step"`) or one
per step scaled with the context's ratio to the top-k (`"kappa_lk"`; mtpsim.models.penalty);
`"none"` multiplies by 1 (zero penalty: a reuse policy's acceptance is fresh's).
The form says: a draft survives if at least one of kappa equally likely
evidence positions stays selected; a large kappa makes acceptance robust to moderate overlap
loss and collapse only when the overlap is small (target_share at long context).

Two parameter forms:
- `AcceptanceModel` (spec): the sharing-off table (or a measured table for the policy), kappa,
  and a per-request spread: request r uses sigmoid(logit(a_i) + delta_i + z_r),
  z_r ~ N(0, sigma^2), the offsets delta_i keeping vLLM's aggregate rates equal to the input
  (the counters weight each request by its drafts, ~ 1 / tokens per step, so without them
  low-acceptance requests would pull the aggregate down).
- `FittedAcceptance` (a calibration's `AcceptanceFit`): a_i = sigmoid(b0_i + b1_i ln(L/L_ref) + u),
  u ~ N(0, sigma) per request; policies fitted on their own use their own [b0, b1].
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.models.overlap import OverlapParams, fitted_agreement, overlap, overlap_from_agreement
from mtpsim.models.penalty import DEFAULT_PENALTY, parametric
from mtpsim.policies import traits

if TYPE_CHECKING:
    from mtpsim.calibration.schema import Calibration
    from mtpsim.spec import Experiment

Num = float | np.ndarray


# ---- parametric (spec) ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AcceptanceModel:
    """Acceptance of one policy in one experiment."""

    policy: str
    conditional: np.ndarray  # [k] sharing-off (or measured-for-this-policy) conditional rates
    parametric: bool  # False when the policy's rates were given as a measured table
    topk: int
    agreement: float
    step_exponent: float
    target_agreement: float
    kappa: float
    sigma: float
    offset: np.ndarray  # [k] logit offsets that keep the draft-weighted aggregate at the input
    penalty: str = DEFAULT_PENALTY  # mtpsim.models.penalty
    kappa_step_exponent: float = 0.0  # kappa_s = kappa * s ** this (penalty "kappa_step")
    kappa_lk_exponent: float = 0.0  # x ((L / K) / 16) ** this (penalty "kappa_lk")

    @classmethod
    def from_experiment(cls, exp: Experiment, policy: str) -> AcceptanceModel:
        from mtpsim.metrics import marginal_to_conditional

        a = exp.acceptance
        measured = a.policy_rates.get(policy)
        rates = list(measured if measured is not None else a.per_position)[:exp.k]
        cond = np.asarray(rates if a.kind == "conditional" else marginal_to_conditional(rates),
                          float)
        if a.rate_scale != 1.0:  # the workload's acceptance relative to the given rates
            cond = np.minimum(cond * a.rate_scale, 0.99)
        return cls(policy, cond, measured is None, exp.index_topk,
                   a.overlap_agreement, a.overlap_step_exponent, a.target_agreement,
                   a.critical_entries, a.request_sigma, spread_offsets(cond, a.request_sigma),
                   a.penalty, a.critical_step_exponent, a.critical_lk_exponent)

    @property
    def k(self) -> int:
        return int(self.conditional.size)

    @property
    def overlap_params(self) -> OverlapParams:
        return OverlapParams(self.agreement, self.step_exponent, self.target_agreement)

    def factors(self, context: np.ndarray) -> np.ndarray:
        """[n, k] multiplier of each conditional rate for requests at `context` ([n])."""
        context = np.atleast_1d(np.asarray(context, float))
        out = np.ones((context.size, self.k))
        if not self.parametric:
            return out
        params, t = self.overlap_params, traits(self.policy)
        form = parametric(self.penalty, self.kappa, self.kappa_step_exponent, self.kappa_lk_exponent)
        for i in range(self.k):
            if t.runs_indexer(i):  # selects as fresh: keeps all (kappa > 0), factor exactly 1
                continue
            o = overlap(self.policy, context, i, self.topk, params)
            out[:, i] = form.keep(o, i, context / self.topk)
        return out

    def marginal(self, context: np.ndarray, request_shift: np.ndarray | None = None) -> np.ndarray:
        """[n, k] marginal rates m_i = P(drafts 0..i all accepted) at each request's context."""
        cond = np.broadcast_to(self.conditional, (np.atleast_1d(context).size, self.k)).copy()
        if request_shift is not None and self.sigma > 0:
            cond = _shifted(cond, self.offset[None, :] + request_shift[:, None])
        return np.cumprod(cond * self.factors(context), axis=1)

    def expected_marginal(self, context: float) -> list[float]:
        """Mean marginal rates at one context length (no per-request spread)."""
        return [float(x) for x in self.marginal(np.array([context]))[0]]


def _shifted(cond: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """sigmoid(logit(cond) + shift); rates of exactly 0 or 1 stay put."""
    c = np.clip(cond, 1e-9, 1 - 1e-9)
    out = 1 / (1 + np.exp(-(np.log(c / (1 - c)) + shift)))
    return np.where((cond > 0) & (cond < 1), out, cond)


def spread_offsets(cond: np.ndarray, sigma: float, sweeps: int = 4) -> np.ndarray:
    """Logit offsets delta such that, over z ~ N(0, sigma^2) (Gauss-Hermite), the draft-weighted
    mean of each marginal rate equals the input's."""
    return np.array(_spread_offsets(tuple(float(c) for c in cond), float(sigma), sweeps))


@functools.lru_cache(maxsize=64)  # every policy of a run (or of a draw) asks for the same
def _spread_offsets(rates: tuple[float, ...], sigma: float, sweeps: int) -> tuple[float, ...]:
    cond = np.array(rates)
    k = cond.size
    delta = np.zeros(k)
    if sigma <= 0:
        return tuple(delta.tolist())
    from scipy.optimize import brentq

    z, w = _hermegauss40()
    target = np.cumprod(cond)
    # _shifted's parts that do not depend on the offsets, computed once on the same broadcast
    # array as before (so every value, and brentq's path, is the same to the bit): brentq calls
    # aggregate ~170 times per draw of an --uncertainty run
    rows = np.broadcast_to(cond, (z.size, k))
    c = np.clip(rows, 1e-9, 1 - 1e-9)
    logit = np.log(c / (1 - c))
    inside = (rows > 0) & (rows < 1)
    zs = sigma * z[:, None]

    def aggregate(d: np.ndarray) -> np.ndarray:
        out = 1 / (1 + np.exp(-(logit + (d[None, :] + zs))))
        m = np.cumprod(np.where(inside, out, rows), axis=1)
        drafts = w / (1.0 + m.sum(axis=1))
        return (drafts[:, None] * m).sum(axis=0) / drafts.sum()  # no BLAS: stalls when busy

    for _ in range(sweeps):
        for i in range(k):
            if not 0 < cond[i] < 1:
                continue

            def gap(x: float, i: int = i) -> float:
                d = delta.copy()
                d[i] = x
                return float(aggregate(d)[i] - target[i])

            delta[i] = brentq(gap, -30.0, 30.0, xtol=1e-10)
    return tuple(delta.tolist())


@functools.cache
def _hermegauss40() -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite (probabilists') nodes and normalised weights, 40 points."""
    z, w = np.polynomial.hermite_e.hermegauss(40)
    return z, w / w.sum()


# ---- fitted (calibration) ---------------------------------------------------------------------
def fitted_overlap(cal: Calibration, policy: str, context: np.ndarray, step: int,
                   topk: int) -> np.ndarray:
    """A calibration's overlap at draft `step` (0-based): 1 where the policy runs the MTP
    indexer and at step 0 (traces record the overlap of steps >= 1 only)."""
    from mtpsim.calibration.schema import CalibrationError

    context = np.atleast_1d(np.asarray(context, float))
    if traits(policy).runs_indexer(step) or step == 0:
        return np.ones_like(context)
    try:
        c = fitted_agreement(cal.overlap, policy, context, step, topk)
    except KeyError:
        raise CalibrationError(cal.path, f"overlap.policies.{policy}",
                               f"missing: no trace of policy {policy!r} was fitted") from None
    return overlap_from_agreement(policy, context, step, topk, c)


# ---- draws ------------------------------------------------------------------------------------
def draw_accepted(rng: np.random.Generator, marginal: np.ndarray, num_steps: int) -> np.ndarray:
    """[n, num_steps] accepted drafts per step: A = #{i : U < m_i}, one uniform per draft
    (inverse CDF, so common random numbers pair policies step by step)."""
    u = rng.random((marginal.shape[0], num_steps))
    a = np.zeros(u.shape, np.int8)
    for i in range(marginal.shape[1]):  # k two-dimensional passes, no [n, steps, k] array
        a += u < marginal[:, i:i + 1]
    return a
