"""The PR-layout table: one column per policy and deltas computed as documented."""

from rich.console import Console

from mtpsim.records import RunExtra
from mtpsim.report.tables import pr_table, summary_lines
from mtpsim.result import PHASES, Result


def res(policy: str, thr: float, length: float, pos: list[float], indexer: float) -> Result:
    phases = dict.fromkeys(PHASES, 0.0)
    phases.update(verify=0.050, draft_decode_indexer=indexer)
    extra = RunExtra() if policy == "fresh" else RunExtra(step_saving_vs_fresh_s=1e-4 - indexer)
    return Result(mode="simulate", policy=policy, phases=phases, extra=extra, metrics={
        "output_throughput": thr, "spec_decode_acceptance_length": length,
        "spec_decode_acceptance_rate": 60.0, "spec_decode_num_drafts": 1000,
        "spec_decode_per_position_acceptance_rates": pos})


def render(table) -> str:
    c = Console(width=200, record=True)
    c.print(table)
    return c.export_text()


def test_deltas_are_relative_for_throughput_and_points_for_rates():
    out = render(pr_table({"fresh": res("fresh", 1000.0, 2.83, [0.8745, 0.6], 1e-4),
                           "share": res("share", 1010.0, 2.82, [0.8700, 0.6], 0.0)}))
    assert "+1.00 %" in out          # (1010 - 1000) / 1000
    assert "-0.010" in out           # acceptance length difference
    assert "-0.45 pp" in out         # 87.00 - 87.45 points
    assert "1,000" in out and "Pos 1 (%)" in out


def test_summary_names_throughput_change_and_time_saved_per_step():
    (line,) = summary_lines({"fresh": res("fresh", 1000.0, 2.83, [0.9], 1e-4),
                             "share": res("share", 1006.6, 2.82, [0.9], 0.0)})
    assert "output throughput +0.66 % (acceptance length -0.0100)" in line
    assert "saves 100.0 µs per engine step on the same batch (0.20 % of a 50.00 ms step;" in line
    # and says why it is not the phase table's Δ (the runs' own, different batches)
    assert "priced under fresh too" in line and "phase table's Δ" in line
