"""The shipped campaigns' scored configurations, as the post hoc development scripts read them
(docs/data/heldout-vNN: each configuration's registered prediction and both policies' real runs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("fresh", "share")


def data(campaign: str) -> Path:
    return ROOT / "docs" / "data" / f"heldout-{campaign}"


def copy_fit(campaign: str, out: Path) -> Path:
    """The campaign's shipped fit copied to OUT/<campaign>/calibration-bootstrap.json (where
    campaign_v11.predict looks for it), that path."""
    import shutil

    cal = out / campaign / "calibration-bootstrap.json"
    cal.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data(campaign) / "calibration-bootstrap.json", cal)
    return cal


def scored_configs(campaign: str) -> Iterator[tuple[str, dict, dict]]:
    """(configuration, its shipped prediction, {policy: Result}) for every configuration of
    `campaign` whose prediction and both real runs are shipped, in name order."""
    from mtpsim.result import load_result

    folder = data(campaign)
    for pred_path in sorted((folder / "predictions").glob("*.json")):
        cfg = pred_path.stem
        real = folder / cfg / "real"
        if cfg == "manifest" or not all((real / f"{p}.json").is_file() for p in POLICIES):
            continue
        yield cfg, json.loads(pred_path.read_text()), {p: load_result(real / f"{p}.json") for p in POLICIES}


def round_probe(round_: dict) -> float | None:
    """A policy's half of a round on the out-of-engine probe: the mean of the probes timed just
    before and just after it (mtpsim.probe: 5 pinned repeats each, their CPU figure)."""
    from mtpsim.probe import figure

    return figure([x for x in (round_.get("probe") or {}).values() if isinstance(x, dict)], "cpu")
