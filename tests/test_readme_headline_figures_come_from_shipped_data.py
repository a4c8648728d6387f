"""The README's headline figures are re-derived from raw result files shipped in the repository
(`scripts/headline_figures.py`): the README states exactly those values and its answer table
no other figure; docs/validation.md states the figures behind them; the shipped simulation
still reproduces; figures without shipped raw data say so."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import headline_figures as hf  # noqa: E402

README_TEXT = (ROOT / "README.md").read_text(encoding="utf-8")
README = re.sub(r"\s+", " ", README_TEXT)
VALIDATION = re.sub(r"\s+", " ", (ROOT / "docs" / "validation.md").read_text(encoding="utf-8"))


def _parts(groups) -> list[str]:
    return [part for _, figs in groups for f in figs for part in f.value.split(" / ")]


def test_every_derived_figure_is_the_one_the_readme_states():
    groups = hf.figures()
    assert [len(figs) for _, figs in groups] == [4, 3, 2, 2, 2, 3, 3]
    for part in _parts(groups):
        assert part in README, part


def _answer_rows() -> list[list[str]]:
    section = README_TEXT.split("## The answer so far", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| ")]
    assert rows[0] == ["claim", "value (interval)", "command", "data"]
    return [r for r in rows[1:] if set(r) != {"---"}]


def test_the_answer_table_states_no_figure_the_script_does_not_derive():
    rows = _answer_rows()
    assert len(rows) == 7
    derived = sorted(_parts(hf.figures()), key=len, reverse=True)
    for _, value, command, data in rows:
        left = value
        for part in derived:
            left = left.replace(part, "")
        for level in ("(90 %)", "(95 %)", "90 %", "target 80 %"):  # interval levels, a target
            left = left.replace(level, "")
        assert not re.search(r"\d", left), (value, left)
        assert command.startswith("`") and data


def test_the_first_screen_answers_with_an_interval():
    first_screen = "\n".join(README_TEXT.splitlines()[:24])
    assert "Should you turn on" in first_screen
    assert re.search(r"[+−-]\d+\.\d+ % \[[+−-]\d+\.\d+, [+−-]\d+\.\d+\]", first_screen)


def test_validation_states_the_figures_behind_the_readme():
    groups = hf.validation_figures()
    assert [len(figs) for _, figs in groups] == [8, 3]
    for part in _parts(groups):
        assert part in VALIDATION, part


def test_the_reference_run_reproduces_the_documented_acceptance():
    res = hf._results(hf.REFERENCE)
    assert set(res) == {"fresh", "share", "share_recent", "target_share"}
    assert all(r.requests and len(r.requests) == 32 for r in res.values())
    rates = [round(x, 3) for x in res["share"].get("spec_decode_per_position_acceptance_rates")]
    assert rates == [0.784, 0.502, 0.297]  # docs/reference-engine.md, measured at bfdc75e


def test_the_shipped_reference_run_is_paired_by_design():
    """docs/data/reference-cpu ran its policies in 8 interleaved rounds (A B / B A) with the
    machine-speed probe around every policy's round, so `compare` judges its timings from the
    paired rounds; the older one-shot files (reference-cpu-oneshot) get no timing verdict."""
    from mtpsim.compare import NO_ROUNDS, ab_compare

    res = hf._results(hf.REFERENCE)
    for r in res.values():
        rounds = r.extra.rounds or []
        assert [x["index"] for x in rounds] == list(range(8))
        # the spec's order on even rounds, reversed on odd ones
        pairs = zip(rounds[::2], rounds[1::2], strict=True)
        assert all(a["position"] + b["position"] == len(res) - 1 for a, b in pairs)
        assert all(x["probe"][w]["wall_s"] > 0 for x in rounds for w in ("before", "after"))
    for policy in ("share", "share_recent", "target_share"):
        row = {x.key: x for x in ab_compare(res["fresh"], res[policy]).rows}["output_throughput"]
        assert row.rounds == 8 and row.ci_pct and row.verdict != NO_ROUNDS
    old = hf._results(hf.DATA / "reference-cpu-oneshot")
    row = {x.key: x for x in ab_compare(old["fresh"], old["target_share"]).rows}["output_throughput"]
    assert row.verdict == NO_ROUNDS and row.rounds == 0


def test_the_shipped_simulation_still_reproduces(tmp_path, monkeypatch):
    shipped = [f.value for f in hf.upstream_simulated()]
    monkeypatch.setattr(hf, "SIM", tmp_path)
    hf.regenerate()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json", "share.json"]
    assert [f.value for f in hf.upstream_simulated()] == shipped


def test_the_docs_say_which_figures_have_no_raw_data_here():
    assert "are **not shipped**" in VALIDATION and "timings printed, not stored" in VALIDATION
    for f in hf.NOT_SHIPPED:
        assert f.source.split()[1] in VALIDATION  # the script the figure came from


@pytest.mark.slow
@pytest.mark.timeout(1800)  # ~1,000 draws (the adaptive stages): ~1 CPU minute, more under load
def test_the_shipped_uncertainty_summary_is_what_the_command_prints():
    """The summary file is `--uncertainty 64`'s JSON without its draws: rerun, it reproduces
    (the draws do not depend on the worker count)."""
    from mtpsim.uncertainty.run import propagate

    run = propagate(str(ROOT / "experiments" / "pr47352.toml"), [], 64, 2).to_json()
    shipped = hf._json(hf.UNCERTAINTY)["summary"]["all measured rows"]["deltas"]["share"]
    fresh = run["summary"]["all measured rows"]["deltas"]["share"]
    for key in ("median", "lo", "hi", "p_pos"):
        assert abs(fresh["output_throughput"][key] - shipped["output_throughput"][key]) < 1e-9, key
