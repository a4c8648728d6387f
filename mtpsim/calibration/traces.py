"""Fitting to traces: read them, fit, and record the machine, the probe figures and the
ranges they cover; the overlap points a plot draws (the fit's tables are in report/calibration.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from mtpsim.calibration.schema import Calibration
from mtpsim.policies import traits


def fit_from_traces(paths: Sequence[Path], normalise: str | None = None,
                    indexer_keys: str = "own", draft_calls: str = "shared") -> Calibration:
    """Read the traces (TraceError names a bad file) and fit a calibration to them (`normalise`,
    `indexer_keys`, `draft_calls`: mtpsim.calibration.fit.fit_traces)."""
    from mtpsim.calibration.fit import fit_traces
    from mtpsim.trace import read_trace

    traces = [read_trace(p) for p in paths]
    return with_trace_meta(fit_traces(traces, sources=[str(p) for p in paths], normalise=normalise,
                                      indexer_keys=indexer_keys, draft_calls=draft_calls),
                           traces)


def with_trace_meta(cal: Calibration, traces) -> Calibration:
    """Record the machine the traces ran on and the temperatures they sampled at."""
    import dataclasses

    machines = [tr.meta.machine for tr in traces if tr.meta.machine is not None]
    temps = sorted({float(tr.meta.temperature) for tr in traces if tr.meta.temperature is not None})
    ranges = {**cal.ranges, **({"temperature": temps} if temps else {})}
    # the context range the runs were set up to cover (prompt lengths drawn from it), so a
    # repeat of the calibration's own spec does not read as extrapolation by sampling chance
    nominal = [tr.meta.context_range for tr in traces if _pair(tr.meta.context_range)]
    if nominal and ranges.get("context_len"):
        lo, hi = ranges["context_len"][0], ranges["context_len"][-1]
        ranges["context_len"] = [float(min(lo, *(n[0] for n in nominal))),
                                 float(max(hi, *(n[1] for n in nominal)))]
    machine = machines[0] if machines and all(m == machines[0] for m in machines) else (
        {"machines": machines} if machines else {})
    machine = {**machine, **probe_figures(traces), **level_figures(traces), **cal.machine}
    return dataclasses.replace(cal, machine=machine, ranges=ranges)


def probe_figures(traces) -> dict[str, float | int]:
    """The machine-speed probe of the traces' runs (mtpsim.probe): mean wall and CPU seconds over
    every reading taken around them, and the readings' relative spread; {} without probes."""
    from mtpsim.probe import figure

    readings = [p for tr in traces for p in (tr.meta.probe or []) if isinstance(p, dict)]
    wall, cpu = figure(readings, "wall"), figure(readings, "cpu")
    if wall is None or cpu is None:
        return {}
    walls = [float(p["wall_s"]) for p in readings if p.get("wall_s")]
    sd = (sum((w - wall) ** 2 for w in walls) / (len(walls) - 1)) ** 0.5 if len(walls) > 1 else 0.0
    return {"probe_wall_s": wall, "probe_cpu_s": cpu, "probe_readings": len(walls),
            "probe_wall_rel_sd": sd / wall}


def level_figures(traces) -> dict[str, float | int]:
    """The in-engine level probe of the traces' runs (mtpsim.level): the median timed step over
    every reading, on both clocks, and how many readings; {} without any."""
    from mtpsim.level import figure, readings_of

    records = [tr.meta.level for tr in traces]
    wall, cpu = figure(records, "wall"), figure(records, "cpu")
    if wall is None or cpu is None:
        return {}
    return {"level_wall_s": wall, "level_cpu_s": cpu, "level_readings": len(readings_of(records))}


def _pair(v) -> bool:
    return (isinstance(v, list) and len(v) == 2
            and all(isinstance(x, int | float) and math.isfinite(x) and x > 0 for x in v))


def overlap_points(paths: Sequence[Path]) -> dict[str, list[tuple[int, int, float]]]:
    """policy -> (draft step, context length, overlap) from traces, for plots.overlap."""
    from mtpsim.trace import read_trace

    out: dict[str, list[tuple[int, int, float]]] = {}
    for p in paths:
        tr = read_trace(p)
        if traits(tr.policy).indexer == "every":  # selects as fresh: no overlap recorded
            continue
        pts = out.setdefault(tr.policy, [])
        for st in tr.steps:
            for r in st.requests:
                pts.extend((s + 1, r.context_len, float(o)) for s, o in enumerate(r.overlap))
    return out
