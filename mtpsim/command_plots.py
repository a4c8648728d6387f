"""Which figures each command writes with `--plot DIR` (the drawing is in mtpsim.plots)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtpsim.result import Result

SWEEP_METRICS = ("output_throughput", "median_tpot_ms")


def file_stem(name: str) -> str:
    """`name` as one file name inside the --plot folder: only letters, digits, `_` and `-`
    (names come from validated inputs; this is the second line of defence against `../x`)."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:80]
    return stem or "unnamed"


def simulate_plots(results: Mapping[str, Result], out: Path,
                   traces: Sequence[Path] = ()) -> list[Path]:
    """Per-position acceptance per policy; with traces, overlap vs context per draft step."""
    from mtpsim.plots import plot_acceptance, plot_overlap

    paths = [plot_acceptance(results, out / "acceptance.png")]
    if traces:
        from mtpsim.calibration.report import overlap_points

        for policy, pts in overlap_points(traces).items():
            if pts:
                paths.append(plot_overlap(pts, out / f"overlap-{file_stem(policy)}.png"))
    return paths


def compare_plots(pairs: Mapping[str, tuple[Result, Result]],
                  by_mode: Mapping[str, Mapping[str, Result]], out: Path) -> list[Path]:
    """Sim-vs-real scatter over every policy's metrics, and per-position acceptance per mode."""
    from mtpsim.compare import fidelity
    from mtpsim.plots import plot_acceptance, plot_sim_vs_real

    paths = []
    points = [(f"{policy}:{r.key}", r.real, r.sim) for policy, (real, sim) in pairs.items()
              for r in fidelity(real, sim) if r.real > 0 and r.sim > 0]
    if points:
        paths.append(plot_sim_vs_real(points, out / "sim-vs-real.png"))
    for mode, results in by_mode.items():
        if results:
            paths.append(plot_acceptance(results, out / f"acceptance-{mode}.png"))
    return paths


def sweep_plots(rows: Sequence[Mapping[str, Any]], axes: Sequence[str], out: Path) -> list[Path]:
    """Throughput and TPOT against each swept field, one line per policy (other fields at their
    first value, so every line is a clean one-factor cut of the grid)."""
    from mtpsim.plots import plot_sweep

    paths = []
    for axis in axes:
        others = [a for a in axes if a != axis]
        first = {a: rows[0][a] for a in others} if rows else {}
        cut = [r for r in rows if all(r[a] == v for a, v in first.items())]
        if len({r[axis] for r in cut}) < 2:
            continue
        name = file_stem(axis.replace(".", "_"))
        paths.append(plot_sweep(cut, axis, list(SWEEP_METRICS), out / f"sweep-{name}.png"))
    return paths
