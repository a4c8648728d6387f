"""`sweep --plot DIR` over a grid with no axis of two or more values (no --set, or a one-value
--set, which is a plain override) made DIR empty and said nothing. It is now refused before the
run, one line, and no folder is made; a grid whose points did not finish enough values to draw a
line says so instead of leaving the folder empty without a word."""

from __future__ import annotations

import io

from _cli import one_error_line

from mtpsim.console import StdConsole
from mtpsim.report.sweep import NO_PLOT, print_sweep
from mtpsim.runs.sweep import SweepRun

WANT = ("error: --plot: expected a grid with an axis of two or more values to plot against "
        "(e.g. --set workload.max_concurrency=1,4), got 1 point and no such axis")


def test_a_grid_without_an_axis_is_refused_before_any_folder(tmp_path):
    for sets in ([], ["--set", "workload.max_concurrency=4"]):
        plots = tmp_path / f"plots{len(sets)}"
        assert one_error_line("sweep", "experiments/pr47352.toml", "-j", "1", *sets,
                              "--plot", str(plots), quiet_stdout=True) == WANT
        assert not plots.exists()


def test_a_grid_whose_points_left_one_value_notes_that_no_plot_was_written(tmp_path, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    rows = [{"workload.max_concurrency": 1, "policy": p, "output_throughput": 100.0}
            for p in ("fresh", "share")]  # the point at 4 failed
    run = SweepRun("x.toml", [], ["workload.max_concurrency"], 2, rows, 1.0, 0,
                   failed=["workload.max_concurrency=4 (p1): boom"])
    print_sweep(StdConsole(), run, plot=tmp_path)
    assert f"note: {NO_PLOT}\n" in out.getvalue()
    assert list(tmp_path.iterdir()) == []
