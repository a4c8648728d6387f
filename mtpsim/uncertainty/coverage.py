"""Scoring intervals against real outcomes: covered or not, the interval score, the width.

The interval score of a central (1 - a) interval [l, u] for an outcome x is
(u - l) + (2 / a) (l - x) [x < l] + (2 / a) (x - u) [x > u] (Gneiting and Raftery 2007): it
rewards narrow intervals and charges misses by their distance, so an interval that covers by
being useless scores badly. Levels are scored relative to the outcome (in %), deltas in their
own units (% points for timings, absolute for acceptance length).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from statistics import NormalDist

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.uncertainty.intervals import Interval

COVERAGE_METRICS = ("spec_decode_acceptance_length", "output_throughput", "median_tpot_ms")
ACCEPTANCE_METRIC = "spec_decode_acceptance_length"
# median half-width limits inside the calibrated range, % of the median
WIDTH_LIMITS = {"spec_decode_acceptance_length": 3.0, "output_throughput": 12.0,
                "median_tpot_ms": 12.0}


@dataclass(frozen=True, slots=True)
class Scored:
    config: str
    what: str  # a policy, or "share-fresh" for a delta
    metric: str
    real: float
    interval: Interval
    inside: bool  # the configuration lies inside the calibrated range
    alpha: float

    @property
    def covered(self) -> bool:
        return self.interval.lo <= self.real <= self.interval.hi

    @property
    def is_delta(self) -> bool:
        return "-" in self.what

    @property
    def score(self) -> float:
        iv, x, a = self.interval, self.real, self.alpha
        s = (iv.hi - iv.lo) + 2 / a * max(iv.lo - x, 0.0) + 2 / a * max(x - iv.hi, 0.0)
        return s if self.is_delta else 100 * s / abs(x)

    @property
    def half_width_pct(self) -> float:
        """Half-width relative to the median, % (levels); in the delta's units for deltas."""
        hw = self.interval.half_width
        return hw if self.is_delta else 100 * hw / abs(self.interval.median)


def real_delta(real: Mapping[str, Mapping[str, float]], policy: str, base: str,
               metric: str) -> float:
    if metric == "spec_decode_acceptance_length":
        return real[policy][metric] - real[base][metric]
    return 100 * (real[policy][metric] / real[base][metric] - 1)


def score_run(config: str, summary: Mapping, real: Mapping[str, Mapping[str, float]],
              policies: Sequence[str], inside: bool, prob: float,
              expected_acceptance: bool = False) -> list[Scored]:
    """Every level and delta of COVERAGE_METRICS against the real figures. With
    `expected_acceptance`, acceptance is scored by the interval of the model's expected
    acceptance length (no draw noise; the real run's own sampling noise then belongs to the
    measurement, see `with_run_noise`)."""
    from mtpsim.uncertainty.intervals import EXPECTED_AL

    def key(m: str) -> str:
        use = expected_acceptance and m == ACCEPTANCE_METRIC and EXPECTED_AL in summary["metrics"][
            policies[0]]
        return EXPECTED_AL if use else m

    out = []
    a = 1 - prob
    for p in policies:
        for m in COVERAGE_METRICS:
            out.append(Scored(config, p, m, float(real[p][m]), summary["metrics"][p][key(m)],
                              inside, a))
    for p in policies[1:]:
        for m in COVERAGE_METRICS:
            out.append(Scored(config, f"{p}-{policies[0]}", m, real_delta(real, p, policies[0], m),
                              summary["deltas"][p][key(m)], inside, a))
    return out


def with_run_noise(row: Scored, se: float) -> Scored:
    """The row scored as a prediction of one real measurement: its interval widened, per side and
    in quadrature, by z * se, where se is the real figure's own standard error (for the mean of
    core-swapped rounds: their spread / sqrt(rounds)). The model interval alone carries only the
    parameters' uncertainty, so a noisy measurement falls outside it by chance."""
    if not se > 0:
        return row
    z = NormalDist().inv_cdf(1 - row.alpha / 2)
    iv, e = row.interval, z * se
    lo = iv.median - math.hypot(iv.median - iv.lo, e)
    hi = iv.median + math.hypot(iv.hi - iv.median, e)
    return replace(row, interval=replace(iv, lo=lo, hi=hi))


def report(rows: Sequence[Scored], model_rows: Sequence[Scored] | None = None) -> dict:
    """Fraction covered, mean interval score and median half-widths, inside and outside.
    `model_rows` (the same rows before `with_run_noise`): the half-widths are theirs, so a
    noisy measurement does not count as the model's width."""
    if model_rows is not None:
        width = {(r.config, r.what, r.metric): r.half_width_pct for r in model_rows}
        rows = [_WidthOf(r, width[(r.config, r.what, r.metric)]) for r in rows]
    out: dict = {"covered": sum(r.covered for r in rows), "values": len(rows),
                 "fraction_covered": float(np.mean([r.covered for r in rows])) if rows else math.nan}
    for where, sel in (("inside", [r for r in rows if r.inside]),
                       ("outside", [r for r in rows if not r.inside])):
        part: dict = {"values": len(sel),
                      "fraction_covered": float(np.mean([r.covered for r in sel])) if sel else math.nan}
        for m in COVERAGE_METRICS:
            lv = [r for r in sel if r.metric == m and not r.is_delta]
            dl = [r for r in sel if r.metric == m and r.is_delta]
            part[m] = {"median_half_width_pct": _med([r.half_width_pct for r in lv]),
                       "mean_interval_score_pct": _mean([r.score for r in lv]),
                       "delta_median_half_width": _med([r.half_width_pct for r in dl]),
                       "delta_mean_interval_score": _mean([r.score for r in dl]),
                       "width_limit_pct": WIDTH_LIMITS[m]}
            if where == "inside" and lv:
                part[m]["width_ok"] = part[m]["median_half_width_pct"] <= WIDTH_LIMITS[m]
        out[where] = part
    inside_ok = all(out["inside"][m].get("width_ok", True) for m in COVERAGE_METRICS)
    out["pass"] = bool(rows) and out["fraction_covered"] >= 0.8 and inside_ok
    return out


class _WidthOf:
    """A scored row whose half-width is another's (its model interval's)."""

    def __init__(self, row: Scored, half_width_pct: float) -> None:
        self._row, self.half_width_pct = row, half_width_pct

    def __getattr__(self, name: str):
        return getattr(self._row, name)


def _med(x: list[float]) -> float:
    return float(np.median(x)) if x else math.nan


def _mean(x: list[float]) -> float:
    return float(np.mean(x)) if x else math.nan
