"""Rich tables: the upstream PR's benchmark layout (one column per policy, deltas), the phase
breakdown per policy, simulated-vs-measured rows and a calibration fit."""

from mtpsim.report.tables import (
    PR_ROWS,
    fit_table,
    measured_table,
    phase_table,
    pr_table,
    prefill_table,
    summary_lines,
)

__all__ = ["PR_ROWS", "fit_table", "measured_table", "phase_table", "prefill_table", "pr_table",
           "summary_lines"]
