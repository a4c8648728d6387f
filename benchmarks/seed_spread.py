"""What the two seed-spread benchmarks (advise_seed_spread.py, mc_seed_spread.py) share: their
command line's folder options, a seed's result that is already there is not run again, an
interval end's range and SD over seeds, and the summary written as JSON."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from mtpsim.fileio import atomic_write_json


def folder_options(ap: argparse.ArgumentParser, out: str) -> None:
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path(out))
    ap.add_argument("--summarise", type=Path, default=None, help="only summarise this folder")
    ap.add_argument("--write", type=Path, default=None, help="write the summary (JSON) here")


def done(path: Path) -> bool:
    """A seed's result is there (resumable runs skip it)."""
    return path.is_file() and path.stat().st_size > 0


def ends_over_seeds(intervals: list[dict], prefix: str = "") -> dict:
    """Each end's (lo, hi) range and SD over the seeds' intervals: `{prefix}lo_range`,
    `{prefix}lo_sd_over_seeds`, and the same for hi (SD None from one seed)."""
    out: dict = {}
    for end in ("lo", "hi"):
        xs = [iv[end] for iv in intervals]
        out[f"{prefix}{end}_range"] = [min(xs), max(xs)]
        out[f"{prefix}{end}_sd_over_seeds"] = statistics.stdev(xs) if len(xs) > 1 else None
    return out


def write(summary: dict, path: Path | None) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, summary)
