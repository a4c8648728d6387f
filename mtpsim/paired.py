"""Paired deltas over interleaved rounds (mtpsim.rounds): drift between policies cancels.

For a timing metric m, round r gives d_r = 100 (m_B,r - m_A,r) / m_A,r, both measured in the
same round, minutes apart. The estimate is the mean of the d_r, its interval Student's t over
rounds (n - 1 degrees of freedom), and P(delta > +region) / P(delta < -region) are read from
the same t distribution (a flat prior on the mean). With `normalise`, each round's figure is
first put in units of the machine-speed probe taken around that policy's block (mtpsim.probe),
or of the in-engine level probe timed inside it (mtpsim.level), which also removes drift within
a round. Fewer than MIN_ROUNDS rounds: "too few rounds to tell".
"""

from __future__ import annotations

import math
from typing import Any

from mtpsim import verdict as v
from mtpsim.dataclass import dataclass
from mtpsim.result import Result

MIN_ROUNDS = 3
TOO_FEW = "too few rounds to tell"


@dataclass(frozen=True, slots=True)
class PairedDelta:
    metric: str
    deltas_pct: list[float]  # per round, B vs A in % of A
    mean: float
    lo: float
    hi: float
    p_above: float  # P(delta > +region)
    p_below: float  # P(delta < -region)
    verdict: str

    @property
    def n(self) -> int:
        return len(self.deltas_pct)


def rounds_of(res: Result) -> list[dict[str, Any]]:
    return [r for r in res.extra.rounds or [] if isinstance(r, dict)]


def _figure(rnd: dict[str, Any], metric: str, normalise: bool | str, clock: str = "cpu") -> float | None:
    from mtpsim import level
    from mtpsim.probe import figure, normalised

    x = rnd.get("metrics", {}).get(metric)
    if not isinstance(x, int | float) or not math.isfinite(x) or x == 0:
        return None
    if not normalise:
        return float(x)
    if normalise == "level":  # the in-engine level probe's figure of this round, on the run's clock
        unit = level.figure(rnd.get("level"), clock)
    else:
        p = rnd.get("probe") or {}
        unit = figure([p.get("before"), p.get("after")])
    if unit is None:
        return None
    return normalised(float(x), unit, rate=v.higher_is_better(metric))


def paired_delta(a: Result, b: Result, metric: str, *, rope: v.Rope | None = None,
                 level: float = 0.95, normalise: bool | str = False) -> PairedDelta | None:
    """B vs A for `metric` from their common rounds; None when either has no rounds of it.
    `normalise`: True or "probe" (the machine probe around each block), "level" (the in-engine
    level probe of each round, on the runs' clock)."""
    from scipy import stats

    rope = rope or v.Rope()
    ra = {r.get("index"): r for r in rounds_of(a)}
    d = []
    for rb in rounds_of(b):
        match = ra.get(rb.get("index"))
        if match is None:
            continue
        clock = a.extra.clock or "wall"
        xa, xb = _figure(match, metric, normalise, clock), _figure(rb, metric, normalise, clock)
        if xa is not None and xb is not None:
            d.append(100.0 * (xb - xa) / xa)
    if not d:
        return None
    half, _ = rope.half_width(metric)
    mean = sum(d) / len(d)
    if len(d) < MIN_ROUNDS:
        return PairedDelta(metric, d, mean, math.nan, math.nan, math.nan, math.nan, TOO_FEW)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
    se = max(sd / math.sqrt(len(d)), 1e-12)
    t = stats.t(len(d) - 1, loc=mean, scale=se)
    lo, hi = t.ppf((1 - level) / 2), t.ppf((1 + level) / 2)
    return PairedDelta(metric, d, mean, float(lo), float(hi), float(t.sf(half)), float(t.cdf(-half)),
                       v.judge(lo, hi, half, v.higher_is_better(metric)))
