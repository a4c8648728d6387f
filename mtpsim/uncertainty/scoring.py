"""Scoring predictions like a forecaster (issue #20 item 7; the v10 campaign's pre-registered score).

Each scored value is one real figure (a level, or a share-vs-fresh delta) against its
prediction's quantiles. Coverage is counted three ways, at 50 / 80 / 90 / 95 %:
  - "model": the prediction's central interval as it is;
  - "+ run noise": each side widened in quadrature by z x the real figure's own SE (the spread
    of its interleaved rounds / sqrt(rounds), or a request bootstrap for acceptance);
  - "+ machine drift": levels also by z x the machine drift SD measured by a separate probe
    series (benchmarks/probe_drift.py: the engine's time over the probe's, relative SD), never
    fitted to the campaign's own misses. Deltas are paired within rounds: no drift term.
The headline column is the one whose widths are the ones reported ("model").
Also: the share of real values above the predicted median (calibrated: ~50 %), the interval
score at 90 % (Gneiting & Raftery 2007, eq. 43) beside two baselines: the leave-one-out mean of
the other configurations' real values (interval: that mean +- z x their SD) and, for deltas,
zero effect (0 +- z x the measurement SE). A delta whose measurement SE exceeds half its
predicted effect is untestable: reported with that power figure and left out of coverage.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import field

from mtpsim.dataclass import dataclass

LEVELS = (0.5, 0.8, 0.9, 0.95)
WAYS = ("model", "+ run noise", "+ machine drift")


def z_of(level: float) -> float:
    return statistics.NormalDist().inv_cdf(0.5 + level / 2)


@dataclass(frozen=True, slots=True)
class Scored:
    """One real value and its prediction. `quantiles`: probability -> predicted value, holding at
    least 0.5 and (1 -+ L) / 2 for every L in LEVELS."""

    config: str
    what: str  # a policy, or "share - fresh" for a delta
    metric: str
    real: float
    quantiles: dict[float, float]
    measurement_se: float = 0.0  # the real figure's own SE (same units)
    drift_sd: float = 0.0  # machine drift SD in the figure's units (levels only)
    inside: bool = True
    delta: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def median(self) -> float:
        return self.quantiles[0.5]

    def interval(self, level: float, way: str = "model") -> tuple[float, float]:
        a = round((1 - level) / 2, 6)
        lo, hi = self.quantiles[a], self.quantiles[round(1 - a, 6)]
        extra = 0.0
        if way in ("+ run noise", "+ machine drift"):
            extra += self.measurement_se ** 2
        if way == "+ machine drift" and not self.delta:
            extra += self.drift_sd ** 2
        if extra:
            z = z_of(level)
            lo = self.median - math.hypot(self.median - lo, z * math.sqrt(extra))
            hi = self.median + math.hypot(hi - self.median, z * math.sqrt(extra))
        return lo, hi

    def covered(self, level: float, way: str = "model") -> bool:
        lo, hi = self.interval(level, way)
        return lo <= self.real <= hi

    @property
    def testable(self) -> bool:
        """A delta is testable when its measurement SE is at most half the predicted effect."""
        return not self.delta or self.measurement_se <= abs(self.median) / 2


def interval_score(lo: float, hi: float, x: float, level: float = 0.9) -> float:
    alpha = 1 - level
    return (hi - lo) + (2 / alpha) * max(lo - x, 0.0) + (2 / alpha) * max(x - hi, 0.0)


def _loo(values: Sequence[Scored], i: int, level: float) -> tuple[float, float] | None:
    others = [v.real for j, v in enumerate(values) if j != i and v.metric == values[i].metric
              and v.what == values[i].what]
    if len(others) < 2:
        return None
    m, sd = statistics.fmean(others), statistics.stdev(others)
    return m - z_of(level) * sd, m + z_of(level) * sd


def report(values: Sequence[Scored], level: float = 0.9) -> dict:
    """Coverage three ways at LEVELS, share above the median, interval scores vs the baselines,
    and the untestable deltas; split by levels / deltas and inside / outside the range."""
    testable = [v for v in values if v.testable]
    out: dict = {"values": len(values), "untestable_deltas": [
        {"config": v.config, "metric": v.metric, "measurement_se": v.measurement_se,
         "predicted_effect": v.median, "power_ratio": v.measurement_se / max(abs(v.median), 1e-12)}
        for v in values if not v.testable]}
    groups = {"all": testable, "levels": [v for v in testable if not v.delta],
              "deltas": [v for v in testable if v.delta],
              "inside": [v for v in testable if v.inside], "outside": [v for v in testable if not v.inside]}
    for name, vs in groups.items():
        g: dict = {"n": len(vs)}
        if vs:
            g["coverage"] = {way: {f"{round(100 * L)}": sum(v.covered(L, way) for v in vs) / len(vs)
                                   for L in LEVELS} for way in WAYS}
            g["above_median"] = sum(v.real > v.median for v in vs) / len(vs)
            g["coverage_ci95"] = {f"{round(100 * L)}": wilson(sum(v.covered(L) for v in vs), len(vs))
                                  for L in LEVELS}
        out[name] = g
    scores: dict = {"model": [], "loo_mean": [], "zero_effect": []}
    for i, v in enumerate(values):
        if not v.testable:
            continue
        lo, hi = v.interval(level)
        scores["model"].append((v.delta, interval_score(lo, hi, v.real, level)))
        loo = _loo(values, i, level)
        if loo is not None:
            scores["loo_mean"].append((v.delta, interval_score(*loo, v.real, level)))
        if v.delta:
            z = z_of(level) * v.measurement_se
            scores["zero_effect"].append((True, interval_score(-z, z, v.real, level)))
    out["interval_score"] = {
        name: {kind: (statistics.fmean(s for d, s in rows if d == (kind == "deltas"))
                      if any(d == (kind == "deltas") for d, _ in rows) else None)
               for kind in ("levels", "deltas")}
        for name, rows in scores.items()}
    return out


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    """Wilson 95 % interval of a coverage share k / n (is nominal inside it?)."""
    if n == 0:
        return [math.nan, math.nan]
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [c - h, c + h]
