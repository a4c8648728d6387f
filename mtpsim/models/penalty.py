"""The overlap -> acceptance link ("penalty"): how much of a draft's conditional acceptance a
reused selection keeps, a_i' = a_i * keep, where o is the overlap at draft step s = i >= 1.

Two forms (`acceptance.penalty` in the spec):
- `kappa` (the first form): keep = 1 - (1 - o) ** kappa, one kappa at every draft step. A draft
  survives if at least one of kappa equally likely evidence positions stays selected.
- `kappa_step`: keep = 1 - (1 - o) ** kappa_s, a kappa per draft step. At step s the reused row
  misses the s positions drafted since it was computed (the most recent ones), so the same set
  overlap can cost more at a later step; one kappa could not follow the measured penalty of
  ~1-4 points at position 1 and ~7-12 at positions 2-3 (docs/calibration.md). Parametric (spec):
  kappa_s = critical_entries * s ** critical_step_exponent (exponent 0: the `kappa` form).
  Fitted (calibration): one kappa_s per step, against the fitted overlap curve at the event's
  context, which is the overlap the simulator feeds in.
"""

from __future__ import annotations

import numpy as np

PENALTIES = ("kappa", "kappa_step")

Num = float | np.ndarray


def keep_factor(overlap: Num, kappa: Num) -> Num:
    """Share of a draft's acceptance a selection with `overlap` keeps: 1 - (1 - o) ** kappa."""
    return 1.0 - (1.0 - overlap) ** kappa


def parametric_kappa(penalty: str, step: int, kappa: float, step_exponent: float) -> float:
    """kappa at draft `step` >= 1 of the spec's form."""
    if penalty == "kappa_step":
        return kappa * float(max(step, 1)) ** step_exponent
    return kappa


def fitted_kappa(penalty: str, step: int, kappa: float | None,
                 kappa_steps: list[float] | None) -> float | None:
    """kappa at draft `step` >= 1 of a calibration's fit (None when it has none of that form);
    steps beyond the fitted ones reuse the last (an extrapolation)."""
    if penalty == "kappa_step":
        if not kappa_steps:
            return None
        return kappa_steps[min(max(step, 1), len(kappa_steps)) - 1]
    return kappa
