"""A registered campaign's shipped power figures (docs/data/heldout-vNN-power/power.json) are for its
configurations as sized: shared by the campaigns' design tests."""

from __future__ import annotations

import json
from pathlib import Path

from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]


def power_rows(c, folder: str) -> tuple[dict, dict]:
    """(power.json, config -> row) after checking the rows are C's configurations in order, at the
    sizes their specs have now (resized: rerun the power script), inside as their names say, and
    the predicted time within the clock rule's minutes."""
    power = json.loads((ROOT / "docs" / "data" / folder / "power.json").read_text())
    rows = {r["config"]: r for r in power["configs"]}
    assert list(rows) == list(c.configs)
    for name, r in rows.items():
        w = load_experiment(str(c.exp / f"{name}.toml")).workload
        assert (r["requests"], r["rounds"]) == (w.num_prompts, w.rounds), name
        assert r["inside"] == name.startswith("in-"), name
    assert power["minutes"]["total"] <= c.run_minutes
    return power, rows
