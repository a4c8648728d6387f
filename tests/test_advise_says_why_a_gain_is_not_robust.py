"""advise's "cannot tell" line names the true reason a best-median gain is not robust: its interval
reaches 0, or its lower end clears 0 by less than the Monte Carlo margin (before, it said "spans 0"
for +0.29 % [+0.07, +1.41], an interval that does not)."""

from mtpsim.report.advise import _not_clear
from mtpsim.uncertainty.advise import above
from mtpsim.uncertainty.intervals import Interval


def _iv(lo: float, mc_se: float) -> Interval:
    return Interval(median=0.3, lo=lo, hi=1.4, p_pos=1.0, mc_se=mc_se)


def test_an_interval_reaching_zero_is_said_to_span_it():
    assert not above(_iv(-0.1, 0.01), 0.0)
    assert _not_clear(_iv(-0.1, 0.01).to_json(), 90) == "90 % interval spans 0"


def test_a_lower_end_inside_the_monte_carlo_margin_is_said_so_not_spanning():
    iv = _iv(0.07, 0.31)
    assert not above(iv, 0.0)  # advise's rule: not robust
    text = _not_clear(iv.to_json(), 90)
    assert "spans 0" not in text and "+0.07 %" in text and "0.31 points" in text
