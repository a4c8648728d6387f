"""From draws to answers: the discrepancy term, weighted medians and intervals, policy deltas
with P(delta > 0) and a "cannot tell" verdict when the interval spans 0."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mtpsim.uncertainty.domain import Extrapolation
from mtpsim.uncertainty.draws import METRICS, Draw

TIMING = ("output_throughput", "median_tpot_ms", "median_ttft_ms", "p90_ttft_ms")
ACCEPT_DISCREPANCY_PCT = 1.0  # model discrepancy of acceptance length - 1 inside the range


@dataclass(frozen=True, slots=True)
class Spread:
    """Model-discrepancy SDs (log scale) applied to every draw's simulated figures: a level for
    timings and one for acceptance length - 1 (shared by all policies), and one for the size of
    each policy's effect against the first (its ratio, or its acceptance-length difference)."""

    time: float
    accept: float
    effect: float

    @classmethod
    def of(cls, ext: Extrapolation, u, calibrated: bool) -> Spread:
        """`u`: the spec's UncertaintySpec. Nothing calibrated: no discrepancy term (the
        priors alone carry the uncertainty)."""
        if not calibrated:
            return cls(0.0, 0.0, 0.0)
        d = ext.distance
        machine = u.machine_pct if ext.machine_differs else 0.0
        time = math.sqrt(u.discrepancy_pct ** 2 + (u.extrapolation_pct * d) ** 2 + machine ** 2)
        acc = math.hypot(ACCEPT_DISCREPANCY_PCT, u.acceptance_extrapolation_pct * d)
        return cls(time / 100, acc / 100, u.effect_extrapolation_pct * d / 100)


def adjust(raw: dict[str, dict[str, float]], draw: Draw, spread: Spread,
           first: str) -> dict[str, dict[str, float]]:
    """Apply the draw's discrepancy scores. Timings of every policy scale by one factor and
    acceptance length - 1 by another; a policy's effect against `first` (the ratio of its
    figure to first's, or the acceptance-length difference) is raised to / scaled by a third,
    so policies the simulator finds identical stay identical."""
    f = math.exp(spread.time * draw.z["z_time"])
    g = math.exp(spread.accept * draw.z["z_accept"])
    e_t = math.exp(spread.effect * draw.z["z_time_policy"])
    e_a = math.exp(spread.effect * draw.z["z_accept_policy"])
    base = raw[first]
    out = {}
    for policy, m in raw.items():
        adj = {}
        for k, v in m.items():
            b = base[k]
            if k in TIMING:
                v = b * (v / b) ** (1.0 if policy == first else e_t)
                adj[k] = v / f if k == "output_throughput" else v * f
            elif k == "spec_decode_acceptance_length":
                v = b + (v - b) * (1.0 if policy == first else e_a)
                adj[k] = 1 + (v - 1) * g
            else:
                adj[k] = v
        out[policy] = adj
    return out


def wquantile(x: np.ndarray, w: np.ndarray | None, q: float) -> float:
    """Weighted quantile (midpoint rule; plain quantile without weights)."""
    x = np.asarray(x, float)
    if w is None:
        return float(np.quantile(x, q))
    order = np.argsort(x)
    xs, ws = x[order], np.asarray(w, float)[order]
    c = (np.cumsum(ws) - 0.5 * ws) / ws.sum()
    return float(np.interp(q, c, xs))


@dataclass(frozen=True, slots=True)
class Interval:
    median: float
    lo: float
    hi: float
    p_pos: float = math.nan  # P(value > 0), for deltas

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    @property
    def spans_zero(self) -> bool:
        return self.lo < 0 < self.hi

    def to_json(self) -> dict[str, float]:
        return {"median": self.median, "lo": self.lo, "hi": self.hi, "p_pos": self.p_pos}


def interval(x: np.ndarray, w: np.ndarray | None, prob: float, delta: bool = False) -> Interval:
    a = (1 - prob) / 2
    p = math.nan
    if delta:
        ww = np.ones(len(x)) if w is None else np.asarray(w, float)
        p = float(ww[np.asarray(x) > 0].sum() / ww.sum())
    return Interval(wquantile(x, w, 0.5), wquantile(x, w, a), wquantile(x, w, 1 - a), p)


def delta_values(values: list[dict[str, dict[str, float]]], policy: str, base: str,
                 metric: str) -> np.ndarray:
    """Per draw: policy vs base, in % for timings, absolute for acceptance length."""
    if metric == "spec_decode_acceptance_length":
        return np.array([v[policy][metric] - v[base][metric] for v in values])
    return np.array([100 * (v[policy][metric] / v[base][metric] - 1) for v in values])


def verdict(iv: Interval, policy: str, base: str) -> str:
    if iv.spans_zero:
        return "cannot tell"
    return f"{policy} {'>' if iv.lo >= 0 else '<'} {base}"


def summarize(values: list[dict[str, dict[str, float]]], policies: tuple[str, ...],
              w: np.ndarray | None, prob: float) -> dict[str, dict]:
    """{"metrics": policy -> metric -> Interval, "deltas": policy -> metric -> Interval}."""
    metrics = {p: {m: interval(np.array([v[p][m] for v in values]), w, prob) for m in METRICS}
               for p in policies}
    base = policies[0]
    deltas = {p: {m: interval(delta_values(values, p, base, m), w, prob, delta=True)
                  for m in METRICS} for p in policies[1:]}
    return {"metrics": metrics, "deltas": deltas}
