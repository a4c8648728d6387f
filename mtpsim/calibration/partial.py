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
    if (note := lk_bound_note(cal, exp)) is not None:
        notes.append(note)
    overlap = dataclasses.replace(cal.overlap, policies=rows)
    return dataclasses.replace(cal, overlap=overlap), notes, left_out


def lk_bound_note(cal: Calibration, exp: Experiment) -> str | None:
    """Under penalty kappa_lk, a fit whose L / K exponent sits at its bound: said, since the
    penalty at the spec's L / K is then extrapolated from an exponent the traces did not pin."""
    from mtpsim.models.penalty import KappaLk

    pen = cal.acceptance.penalty(KappaLk.name) if exp.acceptance.penalty == KappaLk.name else None
    if not isinstance(pen, KappaLk) or not pen.at_bound():
        return None
    ratio = exp.workload.input_len / max(exp.index_topk, 1)
    return (f"penalty kappa_lk: the traces' fit put its L/K exponent at its bound "
            f"({pen.exponent:+.1f}; their L/K centres on {pen.ratio_ref:.1f}), so at this spec's "
            f"L/K (~{ratio:.1f}) the penalty is extrapolated from a value the traces did not pin; "
            "acceptance.penalty = \"kappa_step\" does without it")
