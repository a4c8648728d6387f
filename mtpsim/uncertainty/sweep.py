"""`mtpsim sweep --uncertainty N`: every grid point's intervals and policy deltas.

Each point runs `--uncertainty N` (its draws on the sweep's process pool); with `--out DIR` its
draws are written to DIR/uncertainty/<point id>.json, and a rerun reuses a finished point with
the same number of draws.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.uncertainty.intervals import verdict

if TYPE_CHECKING:
    from mtpsim.runs.executor import Pool


def run_grid(experiment: str, points: Sequence[Any], n: int, jobs: int | Pool, out: Path | None,
             progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """One record per point: values, notes, and per policy / delta the summary intervals."""
    from mtpsim.fileio import atomic_write_json
    from mtpsim.sweep import made_by
    from mtpsim.uncertainty.run import propagate

    records = []
    for i, point in enumerate(points):
        path = None if out is None else out / "uncertainty" / f"{point.point_id}.json"
        rec = _load(path, n)
        if rec is None:
            run = propagate(experiment, list(point.overrides), n, jobs)
            which = run.best()
            rec = {"point_id": point.point_id, "values": point.values, "draws_n": n,
                   "conditioned": which != "prior", "flags": list(run.extrapolation.notes),
                   "rows": _rows(run.summary(which), run.policies, run.exp.k), "run": run.to_json(),
                   "mtpsim": made_by()}
            if path is not None:
                atomic_write_json(path, rec)
        records.append(rec)
        if progress is not None:
            progress(i + 1, len(points))
    return records


def _load(path: Path | None, n: int) -> dict[str, Any] | None:
    """A point's kept draws if they are of `n` draws and this mtpsim's code made them (a sweep's
    points come from one model: mtpsim.sweep.made_by), else None (rerun the point)."""
    return _kept(path, n)[0]


def _kept(path: Path | None, n: int) -> tuple[dict[str, Any] | None, str]:
    """(the point's kept record or None, why not: "" kept, "new", "other", "unread")."""
    from mtpsim.sweep import made_by

    if path is None or not path.is_file():
        return None, "new"
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, "unread"
    if not (isinstance(rec, dict) and rec.get("draws_n") == n and "rows" in rec):
        return None, "unread"
    made = rec.get("mtpsim")
    if not isinstance(made, dict) or made.get("code") != made_by()["code"]:
        return None, "other"
    return rec, ""


def resume_lines(out: Path, points: Sequence[Any], n: int) -> list[str]:
    """What `sweep --uncertainty N --out DIR` does with the draws already in DIR/uncertainty:
    one line per kind, with counts (none when the folder holds none)."""
    folder = out / "uncertainty"
    if not folder.is_dir() or not any(folder.glob("*.json")):
        return []
    why = [_kept(folder / f"{p.point_id}.json", n)[1] for p in points]
    said = {"": f"reused from {folder} (same spec, {n} draws, same mtpsim code)",
            "other": "rerun: made by other mtpsim code, or before point files recorded it",
            "unread": f"rerun: the file does not read as {n} finished draws",
            "new": f"new: no file in {folder}"}
    return [f"resume: {k} point{'s' if k != 1 else ''} {text}" for w, text in said.items()
            if (k := why.count(w))]


def _rows(summary: dict, policies: Sequence[str], k: int | None = None) -> list[dict[str, Any]]:
    base = policies[0]
    out = []
    for p in policies:
        row: dict[str, Any] = {"policy": p}
        for m in ("output_throughput", "median_tpot_ms", "spec_decode_acceptance_length"):
            row[m] = summary["metrics"][p][m].to_json()
        if p != base:
            d = summary["deltas"][p]["output_throughput"]
            row["throughput_delta_pct"] = d.to_json()
            row["verdict"] = verdict(d, p, base, "output_throughput", k)
        out.append(row)
    return out
