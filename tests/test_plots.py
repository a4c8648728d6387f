"""Plots write real PNG files; terminal bars are proportional."""

from mtpsim.report.plots import plot_acceptance, plot_overlap, plot_sim_vs_real, plot_sweep
from mtpsim.report.tables import acceptance_terminal, bar
from mtpsim.result import Result

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def res(policy, rates):
    return Result("simulate", policy, {"spec_decode_per_position_acceptance_rates": rates})


def test_bars_are_proportional_with_eighth_cell_resolution():
    assert bar(0.0, 8) == " " * 8
    assert bar(1.0, 8) == "█" * 8
    assert bar(0.5, 8) == "████    "
    assert bar(1 / 64, 8) == "▏       "


def test_terminal_acceptance_table_has_a_row_per_position_and_policy():
    t = acceptance_terminal({"fresh": res("fresh", [0.9, 0.6]), "share": res("share", [0.9, 0.5])})
    assert t.row_count == 4


def test_every_plot_writes_a_png(tmp_path):
    results = {"fresh": res("fresh", [0.9, 0.6]), "share": res("share", [0.9, 0.5])}
    rows = [{"policy": p, "k": k, "output_throughput": 100 * k} for p in ("fresh", "share") for k in (1, 2)]
    paths = [
        plot_acceptance(results, tmp_path / "acc.png"),
        plot_overlap([(1, 100, 0.9), (2, 200, 0.7)], tmp_path / "ov.png"),
        plot_sweep(rows, "k", ["output_throughput"], tmp_path / "sweep.png"),
        plot_sim_vs_real([("tput", 100.0, 104.0)], tmp_path / "sv.png"),
    ]
    for p in paths:
        assert p.read_bytes()[:8] == PNG_MAGIC
