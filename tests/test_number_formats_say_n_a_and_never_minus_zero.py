"""The formatting vocabulary's rules, which every table inherits: a figure with no data (None,
NaN, inf, a string) reads "-" or "n/a", never "nan"; a signed figure that rounds to zero reads
"+0.00", never "-0.00"; an interval reads "median [lo, hi]"; sizes pick their precision."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from mtpsim.report.numbers import (
    compact,
    delta_interval,
    interval,
    metric_value,
    number,
    signed,
    signed_interval,
    sized,
)

NO_DATA = [None, math.nan, math.inf, -math.inf, "12"]


@pytest.mark.parametrize("x", NO_DATA)
def test_no_data_reads_a_dash_or_n_a(x):
    assert number(x, ",.0f") == "-"
    assert number(x, ".2f", missing="n/a") == "n/a"
    assert interval(x, 1.0, 2.0) == "n/a"
    assert signed_interval(x, 1.0, 2.0) == "n/a"
    if x is not None and not isinstance(x, str):
        assert metric_value(x, "output_throughput") == "-" and sized(x) == "-"


def test_signed_figures_that_round_to_zero_carry_no_minus():
    assert signed(-0.004) == "+0.00"
    assert signed_interval(-0.001, -0.004, 0.3, 2, " %") == "+0.00 % [+0.00, +0.30]"
    assert delta_interval(SimpleNamespace(median=-1.234, lo=-2.0, hi=-0.0001)) == "-1.23 % [-2.00, +0.00]"
    assert signed(-1.5, 2, " %", minus="−") == "−1.50 %"  # prose sets the minus sign


def test_intervals_and_sizes_read_as_the_tables_print_them():
    assert interval(1751.7, 1298.4, 2167.4, ",.1f") == "1,751.7 [1,298.4, 2,167.4]"
    assert number(0.5, ".3f") == "0.500" and number(1234, ",.0f") == "1,234"
    assert metric_value(12345.0, "spec_decode_num_drafts") == "12,345"
    assert metric_value(2.8261, "spec_decode_acceptance_length") == "2.826"
    assert metric_value(1629.94, "output_throughput") == "1,629.94"
    assert [sized(x) for x in (2500.4, 18.413, 0.05, 0.0)] == ["2,500", "18.41", "0.0500", "0.00"]
    assert [compact(x) for x in (16384, 0.5, 3)] == ["16,384", "0.5", "3"]
