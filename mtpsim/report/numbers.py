"""The one formatting vocabulary of every table, plot label and report line.

Rules: a figure with no data (None, NaN, inf) reads `missing` ("-" in a cell, "n/a" in a
sentence), never "nan"; a signed figure that rounds to zero has no sign ("+0.00", never "-0.00");
an interval reads "median [lo, hi]". Every report formats numbers through these, so a rule
changes in one place (tests/test_tables_and_number_formatters_live_in_report.py holds that).
"""

from __future__ import annotations

import math
from typing import Any

COUNT_KEYS = ("spec_decode_num", "_tokens")  # counts of drafts and tokens: whole numbers


def is_count(key: str) -> bool:
    return key.startswith(COUNT_KEYS[0]) or key.endswith(COUNT_KEYS[1])


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def signed(x: float | None, decimals: int = 2, unit: str = "", minus: str = "-") -> str:
    """`x` with an explicit sign at `decimals` places (then `unit`), or "n/a"; prose lines set
    the sign as `minus="−"` (U+2212)."""
    if x is None or not math.isfinite(x):
        return "n/a"
    r = round(x, decimals)
    return f"{r + 0.0 if r else 0.0:+,.{decimals}f}{unit}".replace("-", minus)


def number(x: Any, spec: str = ".2f", missing: str = "-") -> str:
    """`x` in the format `spec` (e.g. ",.0f"), or `missing` when it is not a finite number."""
    return format(x, spec) if _finite(x) else missing


def interval(mid: float, lo: float, hi: float, spec: str = ".2f", unit: str = "",
             missing: str = "n/a") -> str:
    """"mid[unit] [lo, hi]" in the format `spec`; `missing` when the median is not finite."""
    if not _finite(mid):
        return missing
    return f"{format(mid, spec)}{unit} [{format(lo, spec)}, {format(hi, spec)}]"


def signed_interval(mid: float, lo: float, hi: float, decimals: int = 2, unit: str = "") -> str:
    """"+mid[unit] [+lo, +hi]" with `signed`'s rules, or "n/a"."""
    if not _finite(mid):
        return "n/a"
    return f"{signed(mid, decimals)}{unit} [{signed(lo, decimals)}, {signed(hi, decimals)}]"


def delta_interval(iv: Any, unit: str = " %") -> str:
    """An interval of a delta (anything with median, lo and hi) as `signed_interval` writes it."""
    return signed_interval(iv.median, iv.lo, iv.hi, 2, unit)


def metric_value(x: float, key: str) -> str:
    """A benchmark metric as the PR's table prints it: counts whole, acceptance length to 3
    places, the rest to 2 with thousands separators; "-" without data."""
    if not _finite(x):
        return "-"
    if is_count(key):
        return f"{x:,.0f}"
    if key == "spec_decode_acceptance_length":
        return f"{x:.3f}"
    return f"{x:,.2f}"


def sized(x: float, key: str = "") -> str:
    """A figure at a precision that fits its size: counts and |x| >= 1000 whole, |x| >= 0.1 to 2
    places, smaller ones to 4; "-" without data."""
    if not _finite(x):
        return "-"
    if is_count(key) or abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.2f}" if abs(x) >= 0.1 or x == 0 else f"{x:.4f}"


def compact(x: float) -> str:
    """A setting as a person writes it: whole with separators from 100, else the shortest form."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:g}"
