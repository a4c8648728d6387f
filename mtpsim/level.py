"""In-engine level figures (torch-free): the readings the reference engine's level probe
(mtpsim.engine.level) records in a run, the run's level, pooling over rounds, and normalisation.

A run's level is an average over every timed step of its readings, on one clock ("cpu": the
serving thread's CPU seconds, as the reference runs' clock = "cpu"; or "wall"). The record names
the average (`average`, AVERAGES): "median" (the default, and what a record without the field
means: §16's readings at a run's ends and every 128 steps), "trimmed" (the mean of the middle
1 - 2 x TRIM of the steps) or "weighted" (the same trimmed mean with each reading weighted by the
engine seconds it stands for, its `engine_s`: the dense sampling of §17, so the figure averages over
the run as its steps do). A timing measured at level L0 is put on the scale of level L1 by `scaled`
(durations x L1/L0, rates x L0/L1), as mtpsim.probe's figures put a timing on another machine's scale.
"""

from __future__ import annotations

import statistics
from typing import Any

LEVEL_VERSION = 1
AVERAGES = ("median", "trimmed", "weighted")
TRIM = 0.1  # "trimmed" and "weighted" drop this share of the steps' weight at each end


def valid(reading: Any) -> bool:
    return isinstance(reading, dict) and reading.get("version") == LEVEL_VERSION


def readings_of(x: Any) -> list[dict[str, Any]]:
    """The readings in a reading, a run's record (its "readings") or a list of either."""
    if isinstance(x, dict):
        return [r for r in x.get("readings", [x]) if valid(r)] if valid(x) else []
    return [r for item in x or [] for r in readings_of(item)]


def average_of(x: Any) -> str:
    """The average a record (or records, all naming the same) asks for; "median" without one."""
    names = {r.get("average", "median") for r in (x if isinstance(x, list) else [x])
             if isinstance(r, dict) and "readings" in r}
    return names.pop() if len(names) == 1 else "median"


def trimmed_mean(values: list[float], weights: list[float], trim: float = TRIM) -> float:
    """The weighted mean of the values' middle 1 - 2 x `trim` of the total weight (sorted by value;
    a value straddling a cut counts with the part of its weight inside)."""
    pairs = sorted(zip(values, weights, strict=True))
    total = sum(w for _, w in pairs)
    lo, hi, at = trim * total, (1 - trim) * total, 0.0
    num = den = 0.0
    for x, w in pairs:
        kept = max(0.0, min(at + w, hi) - max(at, lo))
        num, den, at = num + kept * x, den + kept, at + w
    return num / den if den > 0 else statistics.median(values)


def figure(readings: Any, clock: str = "cpu", average: str | None = None) -> float | None:
    """A run's level (seconds) over every timed step of its readings, by `average` (else the
    record's own, else the median); None without readings. "weighted" gives each of a reading's
    steps its share of the reading's `engine_s`; readings without it weigh as one step each."""
    how = average or average_of(readings)
    rs = readings_of(readings)
    xs = [float(x) for r in rs for x in r.get(f"{clock}s_s") or []]
    if not xs:
        return None
    if how == "median":
        return statistics.median(xs)
    weighted = how == "weighted" and all(isinstance(r.get("engine_s"), int | float) for r in rs)
    ws = [float(r["engine_s"]) / len(r[f"{clock}s_s"]) if weighted else 1.0
          for r in rs for _ in r.get(f"{clock}s_s") or []]
    return trimmed_mean(xs, ws) if sum(ws) > 0 else statistics.median(xs)


def scaled(value: float, level_from: float, level_to: float, *, rate: bool) -> float:
    """A timing measured at level `level_from` on the scale of `level_to`: a duration x to/from,
    a rate (tok/s) x from/to."""
    factor = level_to / level_from
    return value / factor if rate else value * factor


def record(readings: list[dict[str, Any]], setup_s: float, run_wall_s: float | None = None,
           average: str = "median", every_steps: int | None = None) -> dict[str, Any]:
    """What a run keeps: its readings, its level on both clocks by `average`, the sampling
    (`every_steps`: engine steps between readings while it served), and the probe's overhead (its
    setup and readings, wall seconds, and their share of the run's wall time)."""
    cost = setup_s + sum(float(r["cost_wall_s"]) for r in readings)
    return {"version": LEVEL_VERSION, "readings": readings, "wall_s": figure(readings, "wall", average),
            "cpu_s": figure(readings, "cpu", average), "average": average, "every_steps": every_steps,
            "setup_s": setup_s, "overhead_wall_s": cost, "run_wall_s": run_wall_s,
            "overhead_share": cost / run_wall_s if run_wall_s else None}


def pooled(records: list[Any]) -> dict[str, Any] | None:
    """Rounds' records as one: every reading, the setups, overheads and run times summed; the
    rounds' average and sampling kept when they agree."""
    recs = [r for r in records if valid(r)]
    if not recs:
        return None
    every = {r.get("every_steps") for r in recs}
    out = record(readings_of(recs), sum(float(r.get("setup_s") or 0.0) for r in recs),
                 average=average_of(recs), every_steps=every.pop() if len(every) == 1 else None)
    run = [r.get("run_wall_s") for r in recs]
    if all(isinstance(x, int | float) and x > 0 for x in run):
        out["run_wall_s"] = float(sum(run))
        out["overhead_share"] = out["overhead_wall_s"] / out["run_wall_s"]
    return out
