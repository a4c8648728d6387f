"""A verdict against the region of practical equivalence does not rest on an interval end that
another Monte Carlo seed could put on the other side of the region's bound: each end first moves
outwards by MC_MARGIN of its Monte Carlo SE, so a near end says "cannot tell" (mtpsim.verdict;
what `mtpsim advise` prints), and two seeds never give opposite decisive verdicts."""

import math

import numpy as np

from mtpsim.uncertainty.advise import above, below
from mtpsim.uncertainty.intervals import Interval, verdict
from mtpsim.verdict import BETTER, MC_MARGIN, SAME, UNSURE, WORSE, judge


def test_an_end_within_the_margin_of_a_bound_cannot_tell():
    assert judge(0.6, 2.0, 0.5) == BETTER  # without an SE: decisive, 0.1 past the bound
    assert judge(0.6, 2.0, 0.5, mc_se=0.1) == UNSURE  # 0.6 - 2 x 0.1 is inside the region
    assert judge(0.75, 2.0, 0.5, mc_se=0.1) == BETTER
    assert judge(-2.0, -0.6, 0.5, mc_se=0.1) == UNSURE and judge(-2.0, -0.75, 0.5, mc_se=0.1) == WORSE
    assert judge(-0.3, 0.35, 0.5) == SAME and judge(-0.3, 0.35, 0.5, mc_se=0.1) == UNSURE
    assert judge(-0.3, 0.35, 0.5, mc_se=0.05) == SAME
    assert judge(0.6, 2.0, 0.5, mc_se=math.nan) == BETTER  # no SE known: the ends as they are
    # lower is better for TPOT: the same margin, the words swapped
    iv = Interval(-1.5, -2.0, -0.75, half=0.5, mc_se=0.1)
    assert verdict(iv, "share", "fresh", "median_tpot_ms", mc_margin=True) == "share better"
    near = Interval(-1.5, -2.0, -0.65, half=0.5, mc_se=0.1)
    assert verdict(near, "share", "fresh", "median_tpot_ms", mc_margin=True) == UNSURE
    assert verdict(near, "share", "fresh", "median_tpot_ms") == "share better"  # as simulate says


def test_a_gain_is_robust_only_past_its_margin():
    assert above(Interval(1.0, 0.25, 2.0, mc_se=0.1), 0.0)
    assert not above(Interval(1.0, 0.15, 2.0, mc_se=0.1), 0.0)
    assert below(Interval(-1.0, -2.0, -0.25, mc_se=0.1), 0.0)
    assert not below(Interval(-1.0, -2.0, -0.15, mc_se=0.1), 0.0)
    assert above(Interval(1.0, 0.01, 2.0), 0.0)  # no SE: the end itself


def _seeds(lo: float, hi: float, se: float, n: int, rng, margin: bool) -> list[str]:
    """The verdicts of n seeds whose ends scatter around (lo, hi) by their SE."""
    los, his = lo + se * rng.standard_normal(n), hi + se * rng.standard_normal(n)
    return [judge(a, max(a, b), 0.5, mc_se=se if margin else 0.0) for a, b in zip(los, his, strict=True)]


def test_ten_seeds_never_disagree_decisively_and_an_end_on_the_bound_stays_cannot_tell():
    rng = np.random.default_rng(0)
    se = 0.1
    for lo in np.linspace(-1.5, 1.5, 61):  # every place the lower end can sit, interval 2 wide
        for _ in range(20):
            said = set(_seeds(lo, lo + 2.0, se, 10, rng, margin=True))
            assert len(said - {UNSURE}) <= 1, (lo, said)  # never "better" at one seed, "same" at another
    # the true end on the bound: without the margin every seed is a coin flip; with it, a seed
    # calls it decisive only if its estimate lands MC_MARGIN SEs out (Φ(-2) = 2.3 %)
    bare = _seeds(0.5, 2.5, se, 4000, rng, margin=False)
    kept = _seeds(0.5, 2.5, se, 4000, rng, margin=True)
    assert 0.4 < bare.count(BETTER) / 4000 < 0.6
    assert kept.count(BETTER) / 4000 < 0.04 and MC_MARGIN >= 2
    # and an end 5 SEs past the bound is decisive at all ten seeds in nearly every set
    sets = [set(_seeds(0.5 + 5 * se, 2.5, se, 10, rng, margin=True)) for _ in range(500)]
    assert sum(s == {BETTER} for s in sets) / 500 > 0.95
