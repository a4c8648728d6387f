"""The models fitted from a calibration file (mtpsim.calibration): conditional acceptance per
draft position (`FittedAcceptance`, AcceptanceModel's interface; the forms: mtpsim.models.acceptance)
and step cost per phase (`FittedCost`, CostModel's `step` interface, over the features of
mtpsim.models.cost). mtpsim.models.build imports this module only when a calibration is used, so
a simulation on the parametric and roofline models does not create these classes at start-up
(docs/speed.md, round 10)."""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.models.acceptance import fitted_overlap
from mtpsim.models.cost import StepShape, cost_features, padded
from mtpsim.models.overlap import sigmoid as _sigmoid
from mtpsim.models.penalty import DEFAULT_PENALTY, FORMS, Penalty
from mtpsim.policies import traits
from mtpsim.result import PHASES

if TYPE_CHECKING:
    from mtpsim.calibration.schema import Calibration
    from mtpsim.models.families import Stack


@dataclass(frozen=True, slots=True)
class FittedAcceptance:
    """Conditional acceptance per draft position from a calibration (AcceptanceModel's interface).

    Positions beyond the calibrated k reuse the last position's curve (an extrapolation,
    reported by `extrapolated`). `penalty` picks the fitted overlap -> acceptance link."""

    cal: Calibration
    policy: str
    k: int
    topk: int
    penalty: str = DEFAULT_PENALTY
    _form: Penalty | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        from mtpsim.calibration.schema import CalibrationError

        t = traits(self.policy)
        a = self.cal.acceptance
        if not t.step0_as_fresh and self.policy not in a.policies:
            raise CalibrationError(self.cal.path, f"acceptance.policies.{self.policy}",
                                   f"missing: no trace of policy {self.policy!r} was fitted")
        form = a.penalty(self.penalty)
        object.__setattr__(self, "_form", form)
        if t.reuses_own_row and self.policy not in a.policies and form is None:
            name = FORMS[self.penalty].field
            hint = (f" (a file fitted before the {self.penalty} form: refit it with mtpsim "
                    "simulate --trace ... --save-calibration)" if name != "kappa" and a.kappa
                    else "")
            raise CalibrationError(self.cal.path, f"acceptance.{name}",
                                   f"missing: {self.policy!r} needs a trace of a reuse policy{hint}")

    @property
    def sigma(self) -> float:
        return self.cal.acceptance.sigma

    @property
    def extrapolated(self) -> bool:
        return self.k > len(self._rows())

    def _rows(self) -> list[list[float]]:
        a = self.cal.acceptance
        return a.policies[self.policy] if self.policy in a.policies else a.base

    def conditional(self, context: np.ndarray, request_shift: np.ndarray | None = None) -> np.ndarray:
        """[n, k] conditional acceptance at each request's context."""
        context = np.atleast_1d(np.asarray(context, float))
        rows = self._rows()
        x = np.log(np.maximum(context, 1.0) / self.cal.acceptance.context_ref)
        shift = 0.0 if request_shift is None else np.asarray(request_shift, float)
        out = np.empty((context.size, self.k))
        linked = self.policy not in self.cal.acceptance.policies  # else its own curves
        t = traits(self.policy)
        for i in range(self.k):
            b0, b1 = rows[min(i, len(rows) - 1)]
            a = _sigmoid(b0 + b1 * x + shift)
            if linked and not t.runs_indexer(i):
                o = fitted_overlap(self.cal, self.policy, context, i, self.topk)
                if self._form is not None:  # None: __post_init__ refused any policy that gets here
                    a = a * self._form.keep(o, i, context / self.topk)
            out[:, i] = a
        return out

    def marginal(self, context: np.ndarray, request_shift: np.ndarray | None = None) -> np.ndarray:
        """[n, k] marginal rates m_i = P(drafts 0..i all accepted)."""
        return np.cumprod(self.conditional(context, request_shift), axis=1)

    def expected_marginal(self, context: float) -> list[float]:
        return [float(x) for x in self.marginal(np.array([context]))[0]]


@dataclass(frozen=True, slots=True)
class FittedCost:
    """Step cost from measured phase timings (CostModel's `step` interface)."""

    cal: Calibration
    policy: str
    k: int
    topk: int
    speed: float = 1.0  # duration scale: target machine's probe figure / the calibration's
    stack: Stack | None = None  # the priced model's layer kinds (cost_features)

    def step(self, s: StepShape) -> dict[str, np.ndarray]:
        return self.priced(s)

    def priced(self, q: StepShape) -> dict[str, np.ndarray]:
        """Seconds per phase of steps with these quantities (a simulated step's, or a traced one's),
        the indexer's keys counted as the fit counted them (cost.indexer_keys)."""
        if self.cal.cost.indexer_keys == "padded":
            q = padded(q)
        feats = cost_features(q, self.k, self.topk, self.stack)
        out: dict[str, np.ndarray] = {}
        for p in PHASES:
            fit = self.cal.cost.phases[p]
            v = sum(c * feats[p][n] for n, c in zip(fit.features, fit.coef, strict=True)
                    if n in feats[p])
            out[p] = np.asarray(v, float)
        if not traits(self.policy).runs_indexer(1):  # no MTP indexer at draft steps >= 1
            out["draft_decode_indexer"] = np.zeros_like(out["draft_decode_indexer"])
        if self.k == 0:  # plain decoding: the MTP layer never runs
            for p in ("draft_prefill", "draft_decode_indexer", "draft_decode_rest"):
                out[p] = np.zeros_like(out[p])
        out["overhead"] = out["overhead"] + self.cal.cost.gap_s
        if self.speed != 1.0:
            out = {p: v * self.speed for p, v in out.items()}
        shape = np.broadcast(*out.values()).shape
        return {p: np.broadcast_to(v, shape) for p, v in out.items()}
