"""The README's headline figures are re-derived from raw result files shipped in the repository
(`scripts/headline_figures.py`), and the README states exactly those values; the shipped
simulation still reproduces; figures without shipped raw data say so in the README."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import headline_figures as hf  # noqa: E402

README = re.sub(r"\s+", " ", (ROOT / "README.md").read_text(encoding="utf-8"))


def test_every_derived_figure_is_the_one_the_readme_states():
    groups = hf.figures()
    assert [len(figs) for _, figs in groups] == [9, 2, 2, 3]
    for _, figs in groups:
        for f in figs:
            for part in f.value.split(" / "):
                assert part in README, (f.claim, part)


def test_the_reference_run_reproduces_the_documented_acceptance():
    res = hf._results(hf.REFERENCE)
    assert set(res) == {"fresh", "share", "share_recent", "target_share"}
    assert all(r.requests and len(r.requests) == 32 for r in res.values())
    rates = [round(x, 3) for x in res["share"].get("spec_decode_per_position_acceptance_rates")]
    assert rates == [0.784, 0.502, 0.297]  # docs/reference-engine.md, measured at bfdc75e


def test_the_shipped_simulation_still_reproduces(tmp_path, monkeypatch):
    shipped = [f.value for f in hf.upstream_simulated()]
    monkeypatch.setattr(hf, "SIM", tmp_path)
    hf.regenerate()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json", "share.json"]
    assert [f.value for f in hf.upstream_simulated()] == shipped


def test_the_readme_says_which_figures_have_no_raw_data_here():
    assert "are **not shipped**" in README and "timings printed, not stored" in README
    for f in hf.NOT_SHIPPED:
        assert f.source.split()[1] in README  # the script the figure came from
