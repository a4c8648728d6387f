"""The arithmetic of the answers: intervals and P(delta > 0), the "cannot tell" verdict, the
sensitivity ranking and what to measure next, and interval scores that punish useless width."""

from statistics import NormalDist

import numpy as np

from mtpsim.uncertainty import sensitivity as sens
from mtpsim.uncertainty.coverage import Scored, report, with_run_noise
from mtpsim.uncertainty.intervals import Interval, verdict
from mtpsim.uncertainty.summary import interval, wquantile


def test_a_delta_interval_that_spans_zero_cannot_tell():
    iv = interval(np.linspace(-1, 3, 101), None, 0.9, delta=True)
    assert iv.lo < 0 < iv.hi and verdict(iv, "share", "fresh") == "cannot tell"
    assert abs(iv.p_pos - 75 / 101) < 1e-9
    sure = interval(np.linspace(0.5, 3, 101), None, 0.9, delta=True)
    assert verdict(sure, "share", "fresh") == "share better" and sure.p_pos == 1.0
    assert verdict(sure, "share", "fresh", "median_tpot_ms") == "share worse"  # a longer TPOT
    tiny = interval(np.linspace(0.01, 0.3, 101), None, 0.9, delta=True, half=0.5)
    assert verdict(tiny, "share", "fresh") == "no practical difference" and tiny.p_above == 0.0
    assert verdict(sure, "share", "fresh", k=1) == "same program at k=1"


def test_weights_move_the_quantiles_to_the_weighted_draws():
    x = np.arange(10.0)
    w = np.where(x >= 8, 1.0, 1e-9)
    assert wquantile(x, w, 0.5) >= 8 and wquantile(x, None, 0.5) == 4.5


def test_the_driving_parameter_ranks_first_and_picks_the_measurement():
    rng = np.random.default_rng(0)
    n = 64
    inputs = {name: rng.random(n) for name in ("critical_entries", "mem_efficiency",
                                                "indexer_cost", "overhead_ms")}
    y = 3 * inputs["indexer_cost"] ** 2 + 0.1 * rng.standard_normal(n)
    table = sens.table(inputs, y)
    assert table[0].param == "indexer_cost" and table[0].rho > 0.8 and table[0].share > 0.6
    assert all(s.share < 0.2 for s in table[1:])
    group, share, params = sens.measure_next(table)
    assert group == "draft-step phase timing" and params[0] == "indexer_cost"
    assert "mtpsim run-real EXP.toml" in sens.command_for(group, "EXP.toml", calibrated=False)


def test_a_first_order_share_of_pure_noise_is_about_zero():
    rng = np.random.default_rng(1)
    assert sens.first_order(rng.random(256), rng.standard_normal(256)) < 0.05


def _row(lo, hi, real, inside=True, what="fresh"):
    return Scored("c", what, "output_throughput", real, Interval((lo + hi) / 2, lo, hi), inside, 0.1)


def test_a_wide_interval_that_covers_scores_worse_than_a_tight_near_miss():
    useless = _row(10.0, 1000.0, 100.0)
    near = _row(101.0, 105.0, 100.0)
    assert useless.covered and not near.covered
    assert useless.score > near.score  # 990 % wide vs 4 % + 20 x 1 % miss


def test_the_report_needs_coverage_and_narrow_intervals_inside_the_range():
    rows = [_row(95.0, 105.0, 100.0) for _ in range(8)] + [_row(101.0, 102.0, 100.0)] * 2
    rep = report(rows)
    assert rep["fraction_covered"] == 0.8 and rep["pass"]
    wide = report([_row(50.0, 150.0, 100.0) for _ in range(10)])
    assert wide["fraction_covered"] == 1.0 and not wide["pass"]  # 50 % half-width > 12 %


def test_run_noise_widens_each_side_in_quadrature_and_none_leaves_the_row():
    row = _row(96.0, 104.0, 105.0)  # median 100, half-width 4; a real 105 is outside
    assert with_run_noise(row, 0.0) is row and not row.covered
    z = NormalDist().inv_cdf(0.95)
    noisy = with_run_noise(row, 3.0 / z)  # 3 units of noise at the 90 % level
    assert abs(noisy.interval.hi - 105.0) < 1e-9 and abs(noisy.interval.lo - 95.0) < 1e-9
    assert noisy.covered and noisy.interval.median == row.interval.median
