"""Which spec fields describe the measured setup (workload, engine, model, GPU) and which only
the models, priors and bookkeeping: an override of the latter leaves measured rows valid."""

from __future__ import annotations

# prefixes of fields that are model parameters or bookkeeping, not part of the measured setup
NEUTRAL = ("seed", "policies", "acceptance.", "calibration.", "description", "reference.", "vllm.")


def setup_overrides(sets: list[str]) -> list[str]:
    """The `--set` overrides that change the measured setup (workload, engine, model, GPU)."""
    return [o for o in sets if not o.split("=")[0].strip().startswith(NEUTRAL)]
