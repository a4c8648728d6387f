"""`mtpsim doctor`: is this machine ready to run an experiment for real? One checklist line per
requirement (OK / WARN / FAIL / SKIP, with the fix), read through `Probe` and judged by
`checks`."""

from mtpsim.doctor.checks import CHECKS, Check, Context, run_checks
from mtpsim.doctor.probe import Probe

__all__ = ["CHECKS", "Check", "Context", "Probe", "run_checks"]
