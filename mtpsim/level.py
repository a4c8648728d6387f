"""In-engine level figures (torch-free): the readings the reference engine's level probe
(mtpsim.engine.level) records in a run, the run's level, pooling over rounds, and normalisation.

A run's level is the median over every timed step of its readings, on one clock ("cpu": the
serving thread's CPU seconds, as the reference runs' clock = "cpu"; or "wall"). A timing measured
at level L0 is put on the scale of level L1 by `scaled` (durations x L1/L0, rates x L0/L1), as
mtpsim.probe's figures put a timing on another machine's scale.
"""

from __future__ import annotations

import statistics
from typing import Any

LEVEL_VERSION = 1


def valid(reading: Any) -> bool:
    return isinstance(reading, dict) and reading.get("version") == LEVEL_VERSION


def readings_of(x: Any) -> list[dict[str, Any]]:
    """The readings in a reading, a run's record (its "readings") or a list of either."""
    if isinstance(x, dict):
        return [r for r in x.get("readings", [x]) if valid(r)] if valid(x) else []
    return [r for item in x or [] for r in readings_of(item)]


def figure(readings: Any, clock: str = "cpu") -> float | None:
    """A run's level: the median over every timed step of its readings (seconds); None without."""
    xs = [float(x) for r in readings_of(readings) for x in r.get(f"{clock}s_s") or []]
    return statistics.median(xs) if xs else None


def scaled(value: float, level_from: float, level_to: float, *, rate: bool) -> float:
    """A timing measured at level `level_from` on the scale of `level_to`: a duration x to/from,
    a rate (tok/s) x from/to."""
    factor = level_to / level_from
    return value / factor if rate else value * factor


def record(readings: list[dict[str, Any]], setup_s: float, run_wall_s: float | None = None) -> dict[str, Any]:
    """What a run keeps: its readings, its level on both clocks, and the probe's overhead (its
    setup and readings, wall seconds, and their share of the run's wall time)."""
    cost = setup_s + sum(float(r["cost_wall_s"]) for r in readings)
    return {"version": LEVEL_VERSION, "readings": readings, "wall_s": figure(readings, "wall"),
            "cpu_s": figure(readings, "cpu"), "setup_s": setup_s, "overhead_wall_s": cost,
            "run_wall_s": run_wall_s, "overhead_share": cost / run_wall_s if run_wall_s else None}


def pooled(records: list[Any]) -> dict[str, Any] | None:
    """Rounds' records as one: every reading, the setups, overheads and run times summed."""
    recs = [r for r in records if valid(r)]
    if not recs:
        return None
    out = record(readings_of(recs), sum(float(r.get("setup_s") or 0.0) for r in recs))
    run = [r.get("run_wall_s") for r in recs]
    if all(isinstance(x, int | float) and x > 0 for x in run):
        out["run_wall_s"] = float(sum(run))
        out["overhead_share"] = out["overhead_wall_s"] / out["run_wall_s"]
    return out
