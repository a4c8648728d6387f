"""Traces of only some policies: what a calibration fitted from them can price, and what the
experiment's own values fill in (said out loud, never silently)."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from mtpsim.policies import traits

if TYPE_CHECKING:
    from mtpsim.calibration.schema import Calibration
    from mtpsim.spec import Experiment


def _logit(a: float) -> float:
    a = min(max(a, 1e-9), 1 - 1e-9)
    return math.log(a / (1 - a))


def fill_from_spec(cal: Calibration, exp: Experiment) -> tuple[Calibration, list[str], list[str]]:
    """(calibration, notes, left_out): a policy with no trace gets its overlap agreement from
    the spec (acceptance.overlap_agreement and overlap_step_exponent, or target_agreement; flat
    in context), noted; a policy whose acceptance only its own trace (or a reuse policy's) can
    give is left out, with the reason."""
    from mtpsim.models.overlap import OverlapParams

    params = OverlapParams.from_spec(exp.acceptance)
    rows = dict(cal.overlap.policies)
    a = cal.acceptance
    notes, left_out = [], []
    for policy in exp.policies:
        t = traits(policy)
        if not t.step0_as_fresh and policy not in a.policies:
            left_out.append(f"{policy} (its draft step 0 differs from fresh: only its own trace "
                            "fits its acceptance)")
            continue
        if (t.reuses_own_row and policy not in a.policies
                and a.penalty(exp.acceptance.penalty) is None):
            left_out.append(f"{policy} (the overlap -> acceptance penalty needs a trace of a reuse "
                            "policy)")
            continue
        if all(t.runs_indexer(s) for s in range(1, exp.k)) or rows.get(policy):
            continue
        agreement = [params.agreement_at(policy, s) for s in range(1, max(exp.k, 2))]
        rows[policy] = [[_logit(x), 0.0] for x in agreement]
        field = ("target_agreement" if t.later_rows == "target"
                 else "overlap_agreement and overlap_step_exponent")
        notes.append(f"{policy}: no trace; top-k overlap from the spec's acceptance.{field} "
                     f"(agreement {', '.join(f'{x:.2f}' for x in agreement)} "
                     "at draft steps 1.., flat in context), acceptance and cost from the traces' fit")
    overlap = dataclasses.replace(cal.overlap, policies=rows)
    return dataclasses.replace(cal, overlap=overlap), notes, left_out
