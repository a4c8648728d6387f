"""Every report, rendered at 80 and 120 columns, keeps every figure whole: no cell is truncated
("…"), no number, marker (*, %, pp, ±) or interval ("957 [610, 1,370]") is wrapped away from its
digits, words wrap only at spaces, and no line is wider than the terminal but a command to run,
printed whole on its own line. Titles follow the effective settings and "-" cells are explained
below their table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _sweep_experiment import write_small
from _synthetic_traces import REFERENCE_SPEC as REFERENCE
from _synthetic_traces import make_trace
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from mtpsim import plainprint
from mtpsim.cli import app
from mtpsim.report.fit import COMMAND, cell_text, fit, is_figure

ROOT = Path(__file__).resolve().parents[1]
PR = str(ROOT / "experiments" / "pr47352.toml")
UPSTREAM = str(ROOT / "experiments" / "pr47352-upstream")
FAST = ["--set", "workload.num_prompts=24"]


@pytest.fixture
def tables(monkeypatch):
    """Every table any console prints during the test: rich's, and the plain ones printed to a
    file without rich (`mtpsim.plainprint`)."""
    seen: list[Table | plainprint.Table] = []
    original, original_printed = Console.print, plainprint.printed

    def recording(self, *objects, **kwargs):
        seen.extend(o for o in objects if isinstance(o, Table))
        return original(self, *objects, **kwargs)

    def recording_printed(obj, *args, **kwargs):
        if isinstance(obj, plainprint.Table):
            seen.append(obj)
        return original_printed(obj, *args, **kwargs)

    monkeypatch.setattr(Console, "print", recording)
    monkeypatch.setattr(plainprint, "printed", recording_printed)
    return seen


def _run(args: list[str], width: int) -> str:
    res = CliRunner().invoke(app, args, env={"COLUMNS": str(width)})
    assert res.exit_code == 0, res.output
    return res.output


def assert_whole(output: str, tables: list[Table], width: int) -> None:
    assert tables, "no table was printed"
    lines = output.splitlines()
    assert "…" not in output
    assert max(len(ln.rstrip()) for ln in lines if not ln.startswith(COMMAND)) <= width
    for t in tables:
        for col in t.columns:
            for cell in col._cells:
                text = cell_text(cell).strip()
                if not text:
                    continue
                if is_figure(text):  # a figure with its unit and marker: on one line, whole
                    assert any(text in ln for ln in lines), (t.title, text)
                else:  # words may wrap, at spaces only
                    for word in text.split():
                        assert any(word in ln for ln in lines), (t.title, text, word)
    # a "-" cell is explained under its table (under the last block when the table was cut)
    groups: dict[str, list[Table]] = {}
    for t in tables:
        groups.setdefault(re.sub(r" \(\d+/\d+\)$", "", cell_text(t.title or "")), []).append(t)
    for title, parts in groups.items():
        if any(cell_text(c).strip() == "-" for t in parts for col in t.columns for c in col._cells):
            assert any(t.caption and "-: " in cell_text(t.caption) for t in parts), title


@pytest.mark.parametrize("width", [80, 120])
def test_simulate_with_all_four_policies_and_measured_rows(tables, width):
    out = _run(["simulate", PR, "-p", "fresh", "-p", "share", "-p", "share_recent",
                "-p", "target_share"], width)
    assert_whole(out, tables, width)
    assert "1,629.90*" in out and "18.41*" in out  # the fitted marker stays on its number


@pytest.mark.parametrize("width", [80, 120])
def test_simulate_fitted_to_traces(tables, width, tmp_path):
    exp = tmp_path / "ref.toml"
    exp.write_text(REFERENCE)
    args = ["simulate", str(exp)]
    for policy, seed in (("fresh", 1), ("share", 2)):
        make_trace(policy, seed, n_requests=12).write(tmp_path / f"{policy}.trace.jsonl")
        args += ["--trace", str(tmp_path / f"{policy}.trace.jsonl")]
    assert_whole(_run(args, width), tables, width)


@pytest.mark.parametrize("width", [80, 120])
def test_calibrate(tables, width, tmp_path):
    exp = tmp_path / "pr.toml"
    exp.write_text(Path(PR).read_text())
    assert_whole(_run(["calibrate", str(exp), *FAST], width), tables, width)


@pytest.mark.parametrize("width", [80, 120])
def test_compare_upstream_rows_and_sim_vs_real(tables, width, tmp_path):
    out = _run(["compare", UPSTREAM], width)
    assert "No 95% CI column" in out and "95% CI" not in out.replace("No 95% CI column", "")
    _run(["simulate", str(write_small(tmp_path)), "--out", str(tmp_path / "sim")], 200)
    real = tmp_path / "real"
    real.mkdir()
    for p in ("fresh", "share"):  # a "real" result: the simulated one relabelled
        d = json.loads((tmp_path / "sim" / f"{p}.json").read_text())
        d["mode"] = "reference"
        (real / f"{p}.json").write_text(json.dumps(d))
    tables.clear()
    out = _run(["compare", str(tmp_path / "sim"), str(real)], width)
    assert_whole(out, tables, width)
    assert "sim vs real: fresh" in out


@pytest.mark.parametrize("width", [80, 120])
def test_sweep(tables, width, tmp_path):
    out = _run(["sweep", str(write_small(tmp_path)), "--set", "speculative.num_speculative_tokens=1,2",
                "--set", "workload.max_concurrency=1,4", "--set", "workload.input_len=100,200",
                "-j", "1"], width)
    assert_whole(out, tables, width)
    assert "conc = workload.max_concurrency" in out


@pytest.mark.parametrize("width", [80, 120])
def test_simulate_uncertainty_intervals_conditioning_sensitivity(tables, width):
    out = _run(["simulate", PR, "--uncertainty", "4", "-j", "1"], width)  # measured rows used
    assert_whole(out, tables, width)
    titles = " ".join(cell_text(t.title) for t in tables)
    for what in ("priors only", "conditioned on", "Conditioned prediction vs measured",
                 "What each measurement did", "Sensitivity of"):
        assert what in titles, what
    # a delta stays with its P(Δ>0) and verdict when the table is cut
    for t in tables:
        heads = [cell_text(c.header) for c in t.columns]
        if "P(Δ>0)" in heads:
            i = heads.index("P(Δ>0)")
            assert heads[i - 1] == "share vs fresh" and heads[i + 1] == "verdict"
    assert f"{COMMAND}run-real " in out  # the next measurement, whole on its own line


@pytest.mark.parametrize("width", [80, 120])
def test_sweep_uncertainty(tables, width, tmp_path):
    out = _run(["sweep", str(write_small(tmp_path)), "--set", "workload.input_len=2000,8000",
                "--set", "speculative.num_speculative_tokens=1,3", "--uncertainty", "3", "-j", "1"],
               width)
    assert_whole(out, tables, width)
    assert sum("P(Δ>0)" in [cell_text(c.header) for c in t.columns] for t in tables) == 1


@pytest.mark.parametrize("width", [80, 120])
def test_advise(tables, width, tmp_path):
    dep = tmp_path / "dep.toml"
    dep.write_text(ADVISE)
    out = _run(["advise", str(dep), "--draws", "3", "-j", "1"], width)
    assert_whole(out, tables, width)
    assert all(cell_text(t.columns[0].header) == "k" and cell_text(t.columns[1].header) == "policy"
               for t in tables)  # the row labels repeat in every block
    assert "recommended: k=" in out


ADVISE = """
[deployment]
model = "deepseek-v3.2"
tp = 4
quantization = "nvfp4"
[workload]
context_lengths = [1024, 16384]
concurrency = [2]
output_len = 32
[advise]
k = [1, 3]
"""


def test_an_interval_is_one_figure_and_a_verdict_is_words():
    for text in ("957 [610, 1,370]", "+0.18 % [-1.36, +4.44]", "[-9.90, -1.10]",
                 "1.23 pts (-40 %)", "-10.78 % [-16.38, +0.91]"):
        assert is_figure(text), text
    for text in ("cannot tell", "share > fresh", "k 1 outside 3 (1.6)", "fresh wins"):
        assert not is_figure(text), text


@pytest.mark.parametrize("width", [80, 120])
def test_run_real_report(tables, width, tmp_path, monkeypatch):
    """The run-real report (its engine replaced by the simulator, which fills the same Result)."""
    from mtpsim.real.reference import InProcessReference
    from mtpsim.sim.simulator import simulate

    class NoTrace:
        def write(self, path):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text("")

    monkeypatch.setattr(InProcessReference, "target", f"{__name__}:_sim_runner")
    monkeypatch.setattr(sys_module(), "_sim_runner",
                        lambda exp, policy, progress: (simulate(exp, policy), NoTrace()), raising=False)
    exp = write_small(tmp_path)
    exp.write_text(exp.read_text().replace('["fresh", "share"]',
                                           '["fresh", "share", "share_recent", "target_share"]'))
    out = _run(["run-real", str(exp), "--out", str(tmp_path / "o"), "--rounds", "1", "--no-probe"], width)
    assert_whole(out, tables, width)


def sys_module():
    import sys

    return sys.modules[__name__]


def test_titles_follow_set_and_k1_says_costs_not_negative_saves(tables):
    out = _run(["simulate", PR, *FAST, "--set", "speculative.num_speculative_tokens=1"], 120)
    title = re.sub(r"\s+", " ", out.split("┏")[0])
    assert "k=1" in title and "k=3" not in title and "24 x 10,240 in" in title
    assert "saves -" not in out
    assert "at k=1 there is no draft step after step 0" in out


def test_a_table_too_wide_is_cut_into_whole_column_blocks_with_labels_repeated():
    t = Table(title="wide")
    t.add_column("Metric")
    for i in range(9):
        t.add_column(f"policy {i}", justify="right")
    t.add_row("Output token throughput (tok/s)", *[f"{1000 + i:,.2f}*" for i in range(9)])
    parts = fit(t, 80)
    assert len(parts) > 1
    assert [c.header for p in parts for c in p.columns[1:]] == [f"policy {i}" for i in range(9)]
    assert all(p.columns[0]._cells == ["Output token throughput (tok/s)"] for p in parts)
    assert parts[0].title == f"wide (1/{len(parts)})"
