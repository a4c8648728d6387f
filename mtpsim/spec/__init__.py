"""The experiment spec: one validated TOML shared by every mode (simulate, reference, vLLM)."""

from mtpsim.spec.experiment import (
    Experiment,
    available_presets,
    experiment_from_dict,
    load_experiment,
    parse_override,
)
from mtpsim.spec.sections import (
    AcceptanceSpec,
    CalibrationSpec,
    EngineSpec,
    HardwareSpec,
    ModelSpec,
    ReferenceSpec,
    SpeculativeSpec,
    VllmSpec,
    WorkloadSpec,
)

__all__ = [
    "AcceptanceSpec", "CalibrationSpec", "EngineSpec", "Experiment", "HardwareSpec", "ModelSpec",
    "ReferenceSpec", "SpeculativeSpec", "VllmSpec", "WorkloadSpec", "available_presets",
    "experiment_from_dict", "load_experiment", "parse_override",
]
