"""`mtpsim simulate experiments/pr47352.toml`, as text at 100 columns and as --json, is byte for
byte the output in tests/golden/: a change of structure (commands -> runs -> report, typed
records) must not change what a user reads. Only the wall-clock figures are masked, and --json's
per-result `spec` (the resolved experiment, which any new spec field with a default extends).

A deliberate change of the output regenerates the files:
`MTPSIM_REGENERATE_GOLDEN=1 python -m pytest tests/test_simulate_output_is_unchanged_by_refactors.py`
and the diff of tests/golden/ is then part of the review."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"
EXPERIMENT = "experiments/pr47352.toml"


def _run(*flags: str) -> str:
    res = CliRunner().invoke(app, ["simulate", EXPERIMENT, *flags], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    return res.stdout


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("MTPSIM_REGENERATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.fixture(autouse=True)
def _in_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the experiment names its data by checkout-relative paths


def test_the_text_report_is_unchanged():
    text = _run()
    masked = re.sub(r"in [0-9.]+ s wall \([0-9.,]+x real time\)", "in <wall> s wall (<x> real time)",
                    text)
    assert masked != text, "the wall-clock line moved: update the mask"
    _check("simulate-pr47352.txt", masked)


def test_the_json_is_unchanged():
    out = json.loads(_run("--json"))
    out["wall_s"] = "<wall>"
    for res in out["results"].values():
        res.pop("spec")
    _check("simulate-pr47352.json", json.dumps(out, indent=2) + "\n")
