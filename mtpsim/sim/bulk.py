"""What both serving loops (stepped and planned) share about advancing requests in bulk."""

from __future__ import annotations

MAX_BULK_STEPS = 256  # caps context drift within one bulk (acceptance is read at its start)


def sum_min(a: int, b: int, cap: int) -> float:
    """sum_{p=a}^{b} min(p, cap) for 1 <= a <= b."""
    if b <= cap:
        return (a + b) * (b - a + 1) / 2
    if a > cap:
        return cap * (b - a + 1)
    return (a + cap) * (cap - a + 1) / 2 + cap * (b - cap)
