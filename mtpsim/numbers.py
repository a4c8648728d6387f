"""Signed figures as every report prints them: a value that rounds to zero has no sign
("+0.00", never "-0.00"), and a figure with no data (NaN, inf, None) reads "n/a", never "nan"."""

from __future__ import annotations

import math

COUNT_KEYS = ("spec_decode_num", "_tokens")  # counts of drafts and tokens: whole numbers


def is_count(key: str) -> bool:
    return key.startswith(COUNT_KEYS[0]) or key.endswith(COUNT_KEYS[1])


def signed(x: float | None, decimals: int = 2, unit: str = "") -> str:
    """`x` with an explicit sign at `decimals` places (then `unit`), or "n/a"."""
    if x is None or not math.isfinite(x):
        return "n/a"
    r = round(x, decimals)
    return f"{r + 0.0 if r else 0.0:+,.{decimals}f}{unit}"
