"""Verdicts with practical significance: a delta is judged against a region of practical
equivalence (ROPE) around zero, not against zero alone.

"better" / "worse": the whole interval lies beyond the region on one side; "no practical
difference": the whole interval lies inside it; "cannot tell": anything else. Defaults: +-0.5 %
for timings (relative), +-0.01 for acceptance length, +-0.5 points for acceptance rates (%);
every command that prints a verdict takes `--rope-timing` / `--rope-acceptance` to change them.
Two policies that are the same program at the run's k are reported as such and not judged.
"""

from __future__ import annotations

from mtpsim.dataclass import dataclass
from mtpsim.policies import traits

ROPE_TIMING_PCT = 0.5
ROPE_ACCEPTANCE_LENGTH = 0.01
ROPE_ACCEPTANCE_POINTS = 0.5

# Monte Carlo SEs an interval end must clear a region's bound by for a verdict to rest on it: an
# end's estimate is about normal, so at 2 SEs another seed flips the side it lies on ~2 % of the time
MC_MARGIN = 2.0

BETTER, WORSE, SAME, UNSURE = "better", "worse", "no practical difference", "cannot tell"
LOWER_IS_BETTER = ("ttft", "tpot", "itl", "e2el", "duration")


@dataclass(frozen=True, slots=True)
class Rope:
    """Half-widths of the region: timings in percent of the baseline, acceptance length absolute."""

    timing_pct: float = ROPE_TIMING_PCT
    acceptance_length: float = ROPE_ACCEPTANCE_LENGTH
    acceptance_points: float = ROPE_ACCEPTANCE_POINTS

    def half_width(self, metric: str) -> tuple[float, bool]:
        """(half-width, relative): the region for `metric`'s delta (relative: in % of A)."""
        if metric == "spec_decode_acceptance_length":
            return self.acceptance_length, False
        if metric == "spec_decode_acceptance_rate" or metric.startswith("pos"):
            return self.acceptance_points, False
        return self.timing_pct, True


def higher_is_better(metric: str) -> bool:
    return not any(word in metric for word in LOWER_IS_BETTER)


def judge(lo: float, hi: float, half: float, higher_better: bool = True,
          mc_se: float = 0.0) -> str:
    """The verdict for a delta interval [lo, hi] against the region [-half, +half]. `mc_se`: the
    ends' Monte Carlo SE; each end first moves outwards by MC_MARGIN of them, so an end that
    another seed could put on the other side of a bound gives "cannot tell", not a verdict that
    flips with the seed."""
    if lo != lo or hi != hi:  # NaN: no interval
        return UNSURE
    if mc_se == mc_se and mc_se > 0:
        lo, hi = lo - MC_MARGIN * mc_se, hi + MC_MARGIN * mc_se
    if -half <= lo and hi <= half:
        return SAME
    if lo > half:
        return BETTER if higher_better else WORSE
    if hi < -half:
        return WORSE if higher_better else BETTER
    return UNSURE


def same_program(a: str, b: str, k: int) -> bool:
    """Policies `a` and `b` run identical draft steps at draft depth `k` (e.g. share, share_recent
    and fresh at k = 1: only step 0 exists, and all three run the indexer there)."""
    try:
        ta, tb = traits(a), traits(b)
    except ValueError:  # a label, not a policy name: nothing known about the program
        return False
    if ta == tb:
        return True
    return all(ta.runs_indexer(s) and tb.runs_indexer(s) for s in range(k))
