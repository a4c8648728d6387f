"""Simulator models built from a calibration. They live in mtpsim.models (one home for the
parametric and the fitted forms); re-exported here for existing imports."""

from mtpsim.models.acceptance import FittedAcceptance, fitted_overlap
from mtpsim.models.build import SimModels, calibration_path, sim_models
from mtpsim.models.cost import KEY_FEATURES, FittedCost, StepQuantities, cost_features
from mtpsim.models.overlap import overlap_from_agreement

__all__ = ["KEY_FEATURES", "FittedAcceptance", "FittedCost", "SimModels", "StepQuantities",
           "calibration_path", "cost_features", "fitted_overlap", "overlap_from_agreement",
           "sim_models"]
