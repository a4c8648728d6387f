"""docs/uncertainty.md (sections 9-10) states exactly the back-to-back paired deltas, the paired
throughput deltas of the shipped reference run and its repeat (docs/data/reference-cpu{,-repeat}),
the probe
drift and the Monte Carlo spread (prior draws at 64 and 256, the adaptive sampler at 64) that
scripts/headline_figures.py re-derives from docs/data/."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import headline_figures as hf  # noqa: E402


def test_every_trust_figure_is_stated_in_the_doc():
    doc = " ".join((ROOT / "docs" / "uncertainty.md").read_text().split())
    groups = hf.trust_figures()
    assert [len(f) for _, f in groups] == [2, 6, 2, 4]
    for _, figs in groups:
        for f in figs:
            assert " ".join(f.value.split()) in doc, f.value
