"""How much of the fresh top-k selection a policy's selection still contains.

For draft step s (query at p+s, p = last accepted token, context L = p+1 keys up to p) the fresh
selection F holds n_f = min(L+s, K) positions of [0, p+s]; a reused row R holds min(L, K)
positions of [0, p]. Overlap o = |R ∩ F| / |F|.

Assumptions (docs/simulator.md): the s drafted positions p+1..p+s are always in F (recency; exact
when L+s <= K); among the older positions, R agrees with F on a share
    phi = r + (1 - r) * a,   r = min(1, K/L)
(r: what chance alone gives; a: agreement beyond chance). Hence
    o = (n_f - s) * phi / n_f            (= L/(L+s) exactly when L+s <= K)
    o = (s + (n_f - s) * phi) / n_f      for a policy that appends the drafted positions
and o = 1 at a step where the policy runs the MTP indexer (mtpsim.policies traits).

The agreement a has two parameter forms: `OverlapParams` (spec fields: a = c ** (s ** delta) for
the policy's own step-0 row, from the public 35-50 % top-2048 overlap at 68K context; a = c_t for
the target's last-layer row, at every step) and a calibration's `OverlapFit` (per policy and
draft step s >= 1, a = sigmoid(u0_s + u1_s ln(L/K)), fitted to recorded overlaps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.policies import traits

if TYPE_CHECKING:
    from mtpsim.calibration.schema import OverlapFit
    from mtpsim.spec.sections import AcceptanceSpec

Num = float | np.ndarray


def sigmoid(x: Num) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, float)))


@dataclass(frozen=True, slots=True)
class OverlapParams:
    """Parametric agreement: c (consecutive steps), delta (decay with the gap), c_t (target)."""

    agreement: float
    step_exponent: float
    target_agreement: float

    @classmethod
    def from_spec(cls, a: AcceptanceSpec) -> OverlapParams:
        return cls(a.overlap_agreement, a.overlap_step_exponent, a.target_agreement)

    def agreement_at(self, policy: str, step: int) -> float:
        """Agreement beyond chance of `policy`'s reused row with the fresh one at `step`."""
        if traits(policy).later_rows == "target":
            return self.target_agreement
        return self.agreement ** (float(step) ** self.step_exponent)


def agreement_curve(u0: float, u1: float, context: np.ndarray, topk: Num) -> np.ndarray:
    """The fitted form of the agreement: sigmoid(u0 + u1 ln(L/K))."""
    return sigmoid(u0 + u1 * np.log(np.maximum(np.asarray(context, float), 1.0) / topk))


def fitted_agreement(fit: OverlapFit, policy: str, context: np.ndarray, step: int,
                     topk: Num) -> np.ndarray:
    """A calibration's agreement at draft `step` >= 1; steps beyond the fitted ones reuse the
    last. Raises KeyError when `policy` has no fitted rows."""
    rows = fit.policies.get(policy)
    if not rows:
        raise KeyError(policy)
    u0, u1 = rows[min(step, len(rows)) - 1]
    return agreement_curve(u0, u1, context, topk)


def overlap_from_agreement(policy: str, context: np.ndarray, step: int, topk: Num,
                           agreement: Num) -> np.ndarray:
    """Overlap of `policy`'s reused row with the fresh one at draft `step`, given the agreement
    beyond chance of the older positions (the one overlap formula)."""
    L = np.maximum(np.asarray(context, float), 1.0)
    s = float(step)
    n_f = np.minimum(L + s, topk)
    r = np.minimum(1.0, topk / L)
    phi = r + (1.0 - r) * agreement
    if traits(policy).appends_drafted:
        return np.clip((s + (n_f - s) * phi) / n_f, 0.0, 1.0)
    return np.clip((n_f - s) * phi / n_f, 0.0, 1.0)


def overlap(policy: str, context: np.ndarray, step: int, topk: int,
            params: OverlapParams) -> np.ndarray:
    """Overlap o in [0, 1] of `policy`'s selection with the fresh one at draft `step` (0-based)
    for each request's `context` (keys up to and including the last accepted token)."""
    L = np.maximum(np.asarray(context, dtype=float), 1.0)
    if traits(policy).runs_indexer(step):
        return np.ones_like(L)
    return overlap_from_agreement(policy, L, step, topk, params.agreement_at(policy, step))
