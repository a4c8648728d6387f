"""Simulator models built from a calibration: acceptance, top-k overlap and step cost.

They have the interfaces the simulator already uses (`AcceptanceModel.marginal`,
`CostModel.step`), so a calibration file swaps them in without touching the serving loop.
The step-cost features are defined once here (`cost_features`) and used both to fit measured
phase timings (mtpsim.calibration.fit) and to price simulated steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mtpsim.calibration.schema import Calibration, CalibrationError
from mtpsim.result import PHASES

if TYPE_CHECKING:
    from mtpsim.sim.cost import StepShape

Num = float | np.ndarray
REUSE = ("share", "share_recent")  # draft step 0 as fresh; steps >= 1 reuse its row


def _sigmoid(x: Num) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(x, float)))


# ---- top-k overlap ----------------------------------------------------------------------------
def overlap_from_agreement(policy: str, context: np.ndarray, step: int, topk: Num,
                           agreement: np.ndarray) -> np.ndarray:
    """Overlap of `policy`'s row with the fresh one at draft `step` >= 1, given the agreement
    beyond chance c of the older positions (the formulas of mtpsim.sim.overlap)."""
    L = np.maximum(np.asarray(context, float), 1.0)
    s = float(step)
    n_f = np.minimum(L + s, topk)
    r = np.minimum(1.0, topk / L)
    phi = r + (1.0 - r) * agreement
    if policy == "share_recent":
        return np.clip((s + (n_f - s) * phi) / n_f, 0.0, 1.0)
    return np.clip((n_f - s) * phi / n_f, 0.0, 1.0)


def fitted_overlap(cal: Calibration, policy: str, context: np.ndarray, step: int,
                   topk: int) -> np.ndarray:
    """Predicted overlap at draft `step` (0-based; 1 at step 0 for fresh/share/share_recent)."""
    context = np.atleast_1d(np.asarray(context, float))
    if policy == "fresh" or step == 0:
        return np.ones_like(context)
    rows = cal.overlap.policies.get(policy)
    if not rows:
        raise CalibrationError(cal.path, f"overlap.policies.{policy}",
                               f"missing: no trace of policy {policy!r} was fitted")
    u0, u1 = rows[min(step, len(rows)) - 1]  # steps beyond the fitted k reuse the last one
    c = _sigmoid(u0 + u1 * np.log(np.maximum(context, 1.0) / topk))
    return overlap_from_agreement(policy, context, step, topk, c)


# ---- acceptance -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FittedAcceptance:
    """Conditional acceptance per draft position from a calibration (AcceptanceModel's interface).

    Positions beyond the calibrated k reuse the last position's curve (an extrapolation,
    reported by `extrapolated`)."""

    cal: Calibration
    policy: str
    k: int
    topk: int

    def __post_init__(self) -> None:
        if self.policy not in ("fresh", *REUSE) and self.policy not in self.cal.acceptance.policies:
            raise CalibrationError(self.cal.path, f"acceptance.policies.{self.policy}",
                                   f"missing: no trace of policy {self.policy!r} was fitted")
        if self.policy in REUSE and self.cal.acceptance.kappa is None:
            raise CalibrationError(self.cal.path, "acceptance.kappa",
                                   f"missing: {self.policy!r} needs a trace of a reuse policy")

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
        direct = self.policy in self.cal.acceptance.policies
        for i in range(self.k):
            b0, b1 = rows[min(i, len(rows) - 1)]
            a = _sigmoid(b0 + b1 * x + shift)
            if not direct and self.policy in REUSE and i > 0:
                o = fitted_overlap(self.cal, self.policy, context, i, self.topk)
                a = a * (1.0 - (1.0 - o) ** float(self.cal.acceptance.kappa))  # type: ignore[arg-type]
            out[:, i] = a
        return out

    def marginal(self, context: np.ndarray, request_shift: np.ndarray | None = None) -> np.ndarray:
        """[n, k] marginal rates m_i = P(drafts 0..i all accepted)."""
        return np.cumprod(self.conditional(context, request_shift), axis=1)

    def expected_marginal(self, context: float) -> list[float]:
        return [float(x) for x in self.marginal(np.array([context]))[0]]


# ---- step cost --------------------------------------------------------------------------------
@dataclass(slots=True)
class StepQuantities:
    """What a step's cost depends on (fields may be arrays over steps)."""

    num_decode: Num = 0.0  # requests verifying k+1 tokens
    decode_ctx: Num = 0.0  # sum of their contexts
    decode_keys: Num = 0.0  # sum of min(context, top-k)
    num_draft: Num = 0.0  # requests drafting after the step
    draft_ctx: Num = 0.0
    draft_keys: Num = 0.0
    prefill_done: Num = 0.0  # prompts prefilled (each drafts on its own in the reference engine)
    prefill_tokens: Num = 0.0
    prefill_pairs: Num = 0.0  # sum over prompt tokens of (position + 1): indexer query-key pairs

    @classmethod
    def from_shape(cls, s: StepShape) -> StepQuantities:
        return cls(s.num_decode, s.decode_ctx, s.decode_keys, s.num_draft, s.draft_ctx, s.draft_keys,
                   s.prefill_done, s.prefill_tokens, s.prefill_pairs)


# Per phase that runs the sparse attention: its per-key feature, the per-row twin, and its
# per-call feature (None: negligible). With the attention seconds a trace records (Trace
# `attention`), those are fitted on the per-key and per-call features (the attention's own fixed
# cost per model call: sort, gather and softmax launches in every layer) and the rest of the
# phase on the other features; without them one top-k cannot tell the per-key feature from its
# per-row twin, and the twin is left out (all per-row work priced per key).
KEY_FEATURES: dict[str, tuple[str, str, str | None]] = {
    "prefill": ("token_keys", "tokens", None), "verify": ("row_keys", "rows", "steps"),
    "draft_prefill": ("row_keys", "rows", "calls"), "draft_decode_rest": ("row_keys", "rows", "calls")}


def cost_features(x: StepQuantities, k: int, topk: int) -> dict[str, dict[str, np.ndarray]]:
    """phase -> feature name -> value; a phase's seconds are a non-negative combination.

    Rows that attend are priced twice: per row (projections, MLP: independent of top-k) and per
    row *and attended key* (`*_keys` = rows x top-k: the reference engine sorts, gathers and
    attends a static top-k-wide block of keys and values for every query row). The indexer is
    priced per query-key pair (`pairs`, `ctx`)."""
    q, s = k + 1, k - 1
    has_dec = (np.asarray(x.num_decode, float) > 0).astype(float)
    calls = has_dec + np.asarray(x.prefill_done, float)  # propose() calls: one batch + one per prompt
    verify_rows = np.multiply(q, x.num_decode)
    draft_prefill_rows = verify_rows + np.asarray(x.prefill_tokens, float)
    f = {
        # no per-prompt term: with prompt lengths varying it soaks up noise that then fails to
        # scale with top-k; per-prompt host work is priced in `overhead`
        "prefill": {"tokens": x.prefill_tokens, "token_keys": np.multiply(topk, x.prefill_tokens),
                    "pairs": x.prefill_pairs},
        "verify": {"steps": has_dec, "rows": verify_rows, "row_keys": np.multiply(topk, verify_rows),
                   "ctx": np.multiply(q, x.decode_ctx)},
        "draft_prefill": {"calls": calls, "rows": draft_prefill_rows,
                          "row_keys": np.multiply(topk, draft_prefill_rows),
                          "pairs": np.multiply(q, x.decode_ctx) + x.prefill_pairs,
                          "requests": x.num_draft},
        "draft_decode_indexer": {"calls": s * calls, "rows": np.multiply(s, x.num_draft),
                                 "ctx": np.multiply(s, x.draft_ctx)},
        "draft_decode_rest": {"calls": s * calls, "rows": np.multiply(s, x.num_draft),
                              "row_keys": np.multiply(s * topk, x.num_draft)},
        "rejection_sample": {"steps": has_dec, "requests": x.num_decode,
                             "draft_tokens": np.multiply(k, x.num_decode)},
        "overhead": {"steps": np.ones_like(has_dec), "requests": x.num_decode,
                     "prompts": x.prefill_done},
    }
    return {p: {n: np.asarray(v, float) for n, v in d.items()} for p, d in f.items()}


@dataclass(frozen=True, slots=True)
class FittedCost:
    """Step cost from measured phase timings (CostModel's `step` interface)."""

    cal: Calibration
    policy: str
    k: int
    topk: int

    def step(self, s: StepShape) -> dict[str, np.ndarray]:
        feats = cost_features(StepQuantities.from_shape(s), self.k, self.topk)
        out: dict[str, np.ndarray] = {}
        for p in PHASES:
            fit = self.cal.cost.phases[p]
            v = sum(c * feats[p][n] for n, c in zip(fit.features, fit.coef, strict=True)
                    if n in feats[p])
            out[p] = np.asarray(v, float)
        if self.policy != "fresh":  # the MTP indexer runs at step 0 only (never: target_share)
            out["draft_decode_indexer"] = np.zeros_like(out["draft_decode_indexer"])
        out["overhead"] = out["overhead"] + self.cal.cost.gap_s
        shape = np.broadcast(*out.values()).shape
        return {p: np.broadcast_to(v, shape) for p, v in out.items()}


# ---- what the simulator uses ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SimModels:
    acceptance: FittedAcceptance
    cost: FittedCost
    fresh_cost: FittedCost | None  # None when the policy is fresh


def calibration_path(exp) -> str:  # exp: mtpsim.spec.Experiment
    """`[calibration] file`, relative to the experiment file's folder."""
    from pathlib import Path

    p = Path(exp.calibration.file).expanduser()
    if not p.is_absolute() and exp.source not in ("<memory>", ""):
        p = Path(exp.source).parent / p
    return str(p)


def sim_models(exp, policy: str, calibration: Calibration | None = None) -> SimModels | None:
    """Fitted models for `policy`, from `calibration` or the experiment's `[calibration] file`;
    None when neither is given (the simulator then uses its parametric and roofline models).
    Top-k: `speculative.index_topk`, else the one top-k the calibration saw."""
    from mtpsim.calibration.schema import read_calibration

    if calibration is None:
        if not exp.calibration.file:
            return None
        calibration = read_calibration(calibration_path(exp))
    topk = exp.speculative.index_topk
    if topk is None:
        seen = calibration.ranges.get("index_topk", [])
        if len(seen) != 1:
            raise CalibrationError(exp.source, "speculative.index_topk",
                                   "expected a value (the calibration saw "
                                   f"{', '.join(str(int(t)) for t in seen) or 'none'})")
        topk = int(seen[0])
    k = exp.k
    return SimModels(FittedAcceptance(calibration, policy, k, topk),
                     FittedCost(calibration, policy, k, topk),
                     None if policy == "fresh" else FittedCost(calibration, "fresh", k, topk))
