"""Shipped result, trace and calibration files record paths the way a fresh clone can read them
(relative to the checkout), never the absolute paths of the machine that wrote them; the writers
make them so (fileio.portable)."""

from __future__ import annotations

import re
from pathlib import Path

from mtpsim.fileio import portable

ROOT = Path(__file__).resolve().parents[1]
ABSOLUTE = re.compile(r'":\s*"(/[^"]*)"')


def test_no_shipped_json_holds_an_absolute_path():
    found = []
    for folder in ("docs/data", "experiments"):
        for f in (ROOT / folder).rglob("*"):
            if f.suffix in (".json", ".jsonl") and f.is_file():
                found += [f"{f.relative_to(ROOT)}: {m}" for m in ABSOLUTE.findall(f.read_text())]
    assert not found, found[:5]


def test_portable_paths_are_relative_to_the_checkout_or_the_working_folder(tmp_path, monkeypatch):
    weights = ROOT / "mtpsim" / "engine" / "weights" / "reference.safetensors"
    assert portable(weights) == "mtpsim/engine/weights/reference.safetensors"
    monkeypatch.chdir(tmp_path)
    assert portable(tmp_path / "runs" / "x.json") == "runs/x.json"
    assert portable("relative/y.toml") == "relative/y.toml" and portable(None) is None
    assert portable("/elsewhere/z.json") == "/elsewhere/z.json"  # nothing to be relative to
