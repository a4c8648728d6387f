"""The models one simulation uses: fitted from a calibration file when the experiment names one
(or one is given), else parametric (spec acceptance, roofline cost)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtpsim.dataclass import dataclass
from mtpsim.models.acceptance import AcceptanceModel
from mtpsim.models.families import family_of
from mtpsim.policies import BASELINE

if TYPE_CHECKING:
    from mtpsim.calibration.schema import Calibration
    from mtpsim.models.fitted import FittedAcceptance, FittedCost
    from mtpsim.models.roofline import CostModel
    from mtpsim.spec import Experiment


@dataclass(frozen=True, slots=True)
class SimModels:
    """The acceptance model and the step costs (the policy's and, beside a baseline, fresh's)."""

    acceptance: FittedAcceptance | AcceptanceModel
    cost: FittedCost | CostModel
    fresh_cost: FittedCost | CostModel | None  # None when the policy is the baseline
    topk: int = 0  # the top-k the models price


def calibration_path(exp: Experiment) -> str:
    """`[calibration] file`, relative to the experiment file's folder (a --set's relative path
    was rewritten so, from the current folder: mtpsim.spec.paths)."""
    from mtpsim.spec.paths import from_experiment

    return str(from_experiment(exp.source, exp.calibration.file))


def read_experiment_calibration(exp: Experiment) -> Calibration:
    """The calibration `[calibration] file` names; a path that holds no file is one line naming
    the field and where its value came from (the experiment file, or --set), not the joined path
    alone."""
    from pathlib import Path

    from mtpsim.calibration.schema import CalibrationError, read_calibration
    from mtpsim.errors import UserError

    path = calibration_path(exp)
    if not Path(path).exists():
        from mtpsim.spec.paths import shown

        write = "write one with mtpsim simulate EXP --trace T1 --trace T2 --save-calibration FILE"
        if any(o.partition("=")[0].strip() in ("calibration", "calibration.file")
               for o in exp.overrides):  # the value as typed (rewritten from the current folder)
            raise CalibrationError("--set", "calibration.file", f"expected a calibration file, got "
                                   f"{shown(Path(path))!r}: file not found (a relative path on the "
                                   f"command line is taken from the current folder; {write})")
        raise CalibrationError(exp.source, "calibration.file",
                               f"expected a calibration file, got {exp.calibration.file!r}, which "
                               f"is {path}: file not found (a relative path is taken from the "
                               f"experiment file's folder; {write})")
    try:
        return read_calibration(path)
    except UserError as e:
        if e.source != path:
            raise
        from mtpsim.spec.paths import shown

        # the path as the user can type it here, not joined to the experiment's folder
        # (`experiments/../../tmp/c.json` for a --set calibration.file=c.json typed in /tmp)
        raise type(e)(shown(Path(path)), e.field, e.expected) from None


def sim_models(exp: Experiment, policy: str,
               calibration: Calibration | None = None) -> SimModels | None:
    """Fitted models for `policy`, from `calibration` or the experiment's `[calibration] file`;
    None when neither is given (the simulator then uses its parametric and roofline models).
    Top-k: `speculative.index_topk`, else the one top-k the calibration saw."""
    if calibration is None:
        if not exp.calibration.file:
            return None
        calibration = read_experiment_calibration(exp)
    topk = exp.speculative.index_topk
    if topk is None:
        seen = calibration.ranges.get("index_topk", [])
        if len(seen) != 1:
            from mtpsim.calibration.schema import CalibrationError

            raise CalibrationError(exp.source, "speculative.index_topk",
                                   "expected a value (the calibration saw "
                                   f"{', '.join(str(int(t)) for t in seen) or 'none'})")
        topk = int(seen[0])
    from mtpsim.models.fitted import FittedAcceptance, FittedCost

    k = exp.k
    speed = probe_scale(exp, calibration)
    stack = family_of(exp.model).stack(exp.model)
    return SimModels(FittedAcceptance(calibration, policy, k, topk, exp.acceptance.penalty),
                     FittedCost(calibration, policy, k, topk, speed, stack),
                     None if policy == BASELINE
                     else FittedCost(calibration, BASELINE, k, topk, speed, stack), topk)


def probe_scale(exp: Experiment, calibration: Calibration) -> float:
    """Target probe / the calibration's probe (mtpsim.probe): 1 when either is missing."""
    mine = exp.calibration.probe_s
    theirs = (calibration.machine or {}).get("probe_wall_s")
    if not mine or not isinstance(theirs, int | float) or theirs <= 0:
        return 1.0
    return float(mine) / float(theirs)


def models_for(exp: Experiment, policy: str,
               calibration: Calibration | None = None) -> SimModels:
    """The fitted models where a calibration is given or named, else the parametric ones
    (after checking that the weights fit and the KV cache holds one request)."""
    fitted = sim_models(exp, policy, calibration)
    if fitted is not None:
        return fitted
    from mtpsim.models.memory import check_fits
    from mtpsim.models.roofline import CostModel

    check_fits(exp)
    return SimModels(AcceptanceModel.from_experiment(exp, policy), CostModel(exp, policy),
                     None if policy == BASELINE else CostModel(exp, BASELINE), exp.index_topk)
