"""Output paths are checked before the work they would receive: `--save-calibration` naming a
folder, `compare --plot` naming a file. And plot file names come only from validated names, so a
trace whose policy is `../../x` can never write outside the `--plot` folder."""

from __future__ import annotations

import json
from pathlib import Path

from _synthetic_traces import write_policy_traces
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.report import plots as figures
from mtpsim.result import Result

EXPERIMENT = Path(__file__).parent.parent / "experiments" / "pr47352.toml"


def _traces(tmp_path: Path) -> list[Path]:
    return write_policy_traces(tmp_path, n_requests=12)


def test_save_calibration_onto_a_folder_is_refused_before_the_fit(tmp_path, monkeypatch):
    import mtpsim.calibration.traces as report

    def never(*a, **kw):
        raise AssertionError("the fit ran before the output was checked")

    monkeypatch.setattr(report, "fit_from_traces", never)
    folder = tmp_path / "cal.json"
    folder.mkdir()
    fresh, share = _traces(tmp_path)
    r = CliRunner().invoke(app, ["simulate", str(EXPERIMENT), "--trace", str(fresh), "--trace",
                                 str(share), "--save-calibration", str(folder)])
    assert r.exit_code == 2, r.output
    assert f"--save-calibration: {folder}: expected a file to write, got a folder" in r.output


def test_compare_plot_onto_a_file_is_refused_before_reading_inputs(tmp_path):
    blocker = tmp_path / "plots"
    blocker.write_text("")
    r = CliRunner().invoke(app, ["compare", str(tmp_path / "missing.json"), "--plot", str(blocker)])
    assert r.exit_code == 2, r.output
    assert "--plot" in r.output and "missing.json" not in r.output  # refused before reading


def test_a_trace_policy_cannot_name_a_file_outside_the_plot_folder(tmp_path):
    fresh, share = _traces(tmp_path)
    lines = share.read_text().splitlines()
    head = json.loads(lines[0])
    head["policy"] = "../../escaped"
    share.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    plots = tmp_path / "deep" / "er" / "plots"
    r = CliRunner().invoke(app, ["simulate", str(EXPERIMENT), "--set", "workload.num_prompts=4",
                                 "--trace", str(fresh), "--trace", str(share), "--plot", str(plots)])
    assert r.exit_code == 2 and "policy" in r.output, r.output
    assert not list(tmp_path.rglob("*escaped*"))


def test_plot_names_are_sanitized_even_if_a_reader_let_one_through(tmp_path, monkeypatch):
    """Second line of defence: the figure writer keeps any name inside the folder."""
    import mtpsim.calibration.traces as report

    monkeypatch.setattr(report, "overlap_points",
                        lambda traces: {"../../escaped": [(1, 100, 0.5)], "a/b\nc": [(1, 9, 0.1)]})
    res = Result(mode="simulate", policy="fresh",
                 metrics={"spec_decode_per_position_acceptance_rates": [0.8, 0.5]})
    plots = tmp_path / "in" / "plots"
    paths = figures.simulate_plots({"fresh": res}, plots, [tmp_path / "t.jsonl"])
    assert len(paths) == 3
    for p in paths:
        assert p.resolve().parent == plots.resolve() and p.is_file()
    assert {q.parent for q in tmp_path.rglob("*.png")} == {plots}
    assert figures.file_stem("../../x") == "x" and figures.file_stem("..") == "unnamed"
