"""Traces put on one level before a fit: every run's step seconds scaled by (the traces' median
figure / the run's own figure), so slices run at different machine levels fit one step cost.

`by` names the figure: "level" (the in-engine level probe timed inside the run, mtpsim.level) or
"probe" (the one-thread machine probe around it, mtpsim.probe), on the traces' own clock ("cpu"
for the CPU-clock runs, else "wall"). A prediction made from such a fit is on the scale of
`unit_s` (the median); a run at figure f is put on that scale by x unit_s / f (durations).
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mtpsim.calibration.schema import CalibrationError

if TYPE_CHECKING:
    from mtpsim.trace import Trace

BY = ("level", "probe")


def clock_of(traces: Sequence[Trace]) -> str:
    """The traces' clock ("cpu" or "wall"); mixed clocks cannot share one unit."""
    clocks = {tr.meta.clock or "wall" for tr in traces}
    if len(clocks) != 1:
        raise CalibrationError(None, "traces", f"expected one clock to normalise, got {sorted(clocks)}")
    return clocks.pop()


def unit_of(tr: Trace, by: str, clock: str) -> float | None:
    """A trace's figure (seconds) for `by` on `clock`, None when it recorded none."""
    if by == "level":
        from mtpsim.level import figure

        return figure(tr.meta.level, clock)
    from mtpsim.probe import figure as probe_figure

    return probe_figure(tr.meta.probe, clock)


def scaled(tr: Trace, f: float) -> Trace:
    """A copy of `tr` with every second of it times `f`: phases, attention, the shadow and the
    whole timeline (host gaps ran at the same level)."""
    t = copy.deepcopy(tr)
    for st in t.steps:
        for d in (st.phases, st.attention):
            for key in d:
                d[key] *= f
        st.shadow_s *= f
        st.time_s *= f
    return t


def normalised(traces: Sequence[Trace], by: str) -> tuple[list[Trace], dict[str, Any]]:
    """Copies of the traces with every phase, attention, shadow and clock second scaled to the traces'
    median figure, and what was done (by, clock, unit_s, each trace's scale)."""
    if by not in BY:
        raise CalibrationError(None, "normalise", f"expected one of {', '.join(BY)}, got {by!r}")
    clock = clock_of(traces)
    units = [unit_of(tr, by, clock) for tr in traces]
    missing = [i for i, u in enumerate(units) if not u]
    if missing:
        raise CalibrationError(None, "traces", f"expected a {by} figure in every trace to normalise; "
                               f"trace(s) {', '.join(map(str, missing[:5]))} have none")
    ref = statistics.median(units)  # type: ignore[type-var]
    out = []
    for tr, unit in zip(traces, units, strict=True):
        out.append(scaled(tr, ref / unit))  # type: ignore[operator]
    return out, {"by": by, "clock": clock, "unit_s": ref,
                 "scales": [ref / u for u in units]}  # type: ignore[operator]
