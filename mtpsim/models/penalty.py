"""The overlap -> acceptance link ("penalty"): how much of a draft's conditional acceptance a
reused selection keeps, a_i' = a_i * keep, where o is the overlap at draft step s = i >= 1.

Three forms (`acceptance.penalty` in the spec; `kappa_lk` is the default):
- `kappa` (the first form): keep = 1 - (1 - o) ** kappa, one kappa at every draft step. A draft
  survives if at least one of kappa equally likely evidence positions stays selected.
- `kappa_step`: keep = 1 - (1 - o) ** kappa_s, a kappa per draft step. At step s the reused row
  misses the s positions drafted since it was computed (the most recent ones), so the same set
  overlap can cost more at a later step; one kappa could not follow the measured penalty of
  ~1-4 points at position 1 and ~7-12 at positions 2-3 (docs/calibration.md). Parametric (spec):
  kappa_s = critical_entries * s ** critical_step_exponent (exponent 0: the `kappa` form).
  Fitted (calibration): one kappa_s per step, against the fitted overlap curve at the event's
  context, which is the overlap the simulator feeds in.
- `kappa_lk`: kappa_s * ((L / K) / r_ref) ** gamma, the per-step kappa scaled by the context's
  ratio to the top-k. Set overlap counts every selected entry alike, but as L / K grows the
  entries the reused row loses are more and more the low-score tail, which carries little
  attention: acceptance then loses less than the set overlap says (the calibration runs show a
  flat position-1 rate over contexts 300-1,900 where the overlap curve falls; held-out runs at
  top-32 and 4 K show ~0 penalty where kappa_step predicts 3-6 points). gamma > 0 says so.
  The default: fitted on five calibration seeds it is the only form inside every held-out CI of
  the v9 runs (docs/calibration.md); fitted on one seed it extrapolated worse than kappa_step.
  Parametric (spec): kappa_s = critical_entries * s ** critical_step_exponent *
  ((L / K) / LK_REF) ** critical_lk_exponent. Fitted: kappa_lk = {kappa_steps, exponent,
  ratio_ref} (ratio_ref the geometric mean L / K of the fitted events).
"""

from __future__ import annotations

import numpy as np

PENALTIES = ("kappa", "kappa_step", "kappa_lk")
DEFAULT_PENALTY = "kappa_lk"  # the spec's default (acceptance.penalty)
LK_REF = 16.0  # the parametric form's reference L / K

Num = float | np.ndarray


def keep_factor(overlap: Num, kappa: Num) -> Num:
    """Share of a draft's acceptance a selection with `overlap` keeps: 1 - (1 - o) ** kappa."""
    return 1.0 - (1.0 - overlap) ** kappa


def parametric_kappa(penalty: str, step: int, kappa: float, step_exponent: float,
                     lk_exponent: float = 0.0, ratio: Num = LK_REF) -> Num:
    """kappa at draft `step` >= 1 of the spec's form (`ratio`: L / K, per request)."""
    if penalty == "kappa_step":
        return kappa * float(max(step, 1)) ** step_exponent
    if penalty == "kappa_lk":
        return (kappa * float(max(step, 1)) ** step_exponent
                * (np.asarray(ratio, float) / LK_REF) ** lk_exponent)
    return kappa


def fitted_kappa(penalty: str, step: int, kappa: float | None,
                 kappa_steps: list[float] | None, kappa_lk: dict | None = None,
                 ratio: Num = 1.0) -> Num | None:
    """kappa at draft `step` >= 1 of a calibration's fit (None when it has none of that form);
    steps beyond the fitted ones reuse the last (an extrapolation). `ratio`: L / K (kappa_lk)."""
    if penalty == "kappa_step":
        if not kappa_steps:
            return None
        return kappa_steps[min(max(step, 1), len(kappa_steps)) - 1]
    if penalty == "kappa_lk":
        if not kappa_lk:
            return None
        steps = kappa_lk["kappa_steps"]
        return (steps[min(max(step, 1), len(steps)) - 1]
                * (np.asarray(ratio, float) / kappa_lk["ratio_ref"]) ** kappa_lk["exponent"])
    return kappa
