"""The overlap model lives in mtpsim.models.overlap; this keeps the spec-field signature."""

from __future__ import annotations

import numpy as np

from mtpsim.models.overlap import OverlapParams
from mtpsim.models.overlap import overlap as _overlap


def overlap(policy: str, context: np.ndarray, step: int, topk: int, agreement: float,
            step_exponent: float, target_agreement: float) -> np.ndarray:
    """Overlap of `policy`'s selection with the fresh one at draft `step` (0-based), with the
    parametric agreement c, its decay delta and the target agreement c_t given one by one."""
    return _overlap(policy, context, step, topk,
                    OverlapParams(agreement, step_exponent, target_agreement))
