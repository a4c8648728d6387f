"""The step-cost models live in mtpsim.models (roofline, cost); re-exported for existing imports."""

from mtpsim.models.cost import StepShape
from mtpsim.models.memory import check_fits
from mtpsim.models.roofline import CostModel

__all__ = ["CostModel", "StepShape", "check_fits"]
