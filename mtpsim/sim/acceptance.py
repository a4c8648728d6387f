"""Per-position acceptance: the sharing-off table, its change under a reuse policy, and draws.

Conditional rates a_i = P(draft i accepted | drafts 0..i-1 accepted). A policy multiplies each
a_i by the share of the "critical" attention entries its selection keeps,
    a_i' = a_i * (1 - (1 - o_i) ** kappa),
o_i being the overlap with the fresh selection at draft step i (mtpsim.sim.overlap). The form says:
a draft survives if at least one of kappa equally likely evidence positions stays selected; a
large kappa makes acceptance robust to moderate overlap loss and collapse only when the overlap is
small (target_share at long context).

Per-request spread: request r uses sigmoid(logit(a_i) + delta_i + z_r), z_r ~ N(0, sigma^2). The
offsets delta_i keep vLLM's aggregate rates equal to the input: the counters weight each request
by its drafts (~ 1 / tokens per step), so without them low-acceptance requests would pull the
aggregate down.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from mtpsim.metrics import marginal_to_conditional
from mtpsim.sim.overlap import overlap
from mtpsim.spec import Experiment


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

    @classmethod
    def from_experiment(cls, exp: Experiment, policy: str) -> AcceptanceModel:
        a = exp.acceptance
        measured = a.policy_rates.get(policy)
        rates = list(measured if measured is not None else a.per_position)[:exp.k]
        cond = np.asarray(rates if a.kind == "conditional" else marginal_to_conditional(rates),
                          float)
        return cls(policy, cond, measured is None, exp.index_topk,
                   a.overlap_agreement, a.overlap_step_exponent, a.target_agreement,
                   a.critical_entries, a.request_sigma, spread_offsets(cond, a.request_sigma))

    @property
    def k(self) -> int:
        return int(self.conditional.size)

    def factors(self, context: np.ndarray) -> np.ndarray:
        """[n, k] multiplier of each conditional rate for requests at `context` ([n])."""
        context = np.atleast_1d(np.asarray(context, float))
        out = np.ones((context.size, self.k))
        if not self.parametric:
            return out
        for i in range(self.k):
            o = overlap(self.policy, context, i, self.topk, self.agreement, self.step_exponent,
                        self.target_agreement)
            out[:, i] = 1.0 - (1.0 - o) ** self.kappa
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


def draw_accepted(rng: np.random.Generator, marginal: np.ndarray, num_steps: int) -> np.ndarray:
    """[n, num_steps] accepted drafts per step: A = #{i : U < m_i}, one uniform per draft
    (inverse CDF, so common random numbers pair policies step by step)."""
    u = rng.random((marginal.shape[0], num_steps))
    return (u[:, :, None] < marginal[:, None, :]).sum(axis=2)



def _shifted(cond: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """sigmoid(logit(cond) + shift); rates of exactly 0 or 1 stay put."""
    c = np.clip(cond, 1e-9, 1 - 1e-9)
    out = 1 / (1 + np.exp(-(np.log(c / (1 - c)) + shift)))
    return np.where((cond > 0) & (cond < 1), out, cond)


def spread_offsets(cond: np.ndarray, sigma: float, sweeps: int = 4) -> np.ndarray:
    """Logit offsets delta such that, over z ~ N(0, sigma^2) (Gauss-Hermite), the draft-weighted
    mean of each marginal rate equals the input's."""
    k = cond.size
    delta = np.zeros(k)
    if sigma <= 0:
        return delta
    z, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    target = np.cumprod(cond)

    def aggregate(d: np.ndarray) -> np.ndarray:
        m = np.cumprod(_shifted(np.broadcast_to(cond, (z.size, k)), d[None, :] + sigma * z[:, None]),
                       axis=1)
        drafts = w / (1.0 + m.sum(axis=1))
        return drafts @ m / drafts.sum()

    for _ in range(sweeps):
        for i in range(k):
            if not 0 < cond[i] < 1:
                continue

            def gap(x: float, i: int = i) -> float:
                d = delta.copy()
                d[i] = x
                return float(aggregate(d)[i] - target[i])

            delta[i] = brentq(gap, -30.0, 30.0, xtol=1e-10)
    return delta
