"""`mtpsim compare`: sim vs real per policy, and policy A/B within each mode. The run is
mtpsim.runs.compare's, the report mtpsim.report.compare's; this module parses and hands over."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mtpsim.console import StdConsole
from mtpsim.fileio import dumps

console = StdConsole()
err_console = StdConsole(stderr=True)


def compare(
    inputs: Annotated[list[str], typer.Argument(
        help="Results to compare: `[POLICY=]PATH`, PATH an mtpsim result, a `vllm bench serve "
        "--save-result` JSON, or a folder of them (e.g. an `--out` folder). POLICY labels a file "
        "that does not name its policy (vLLM bench JSON).")],
    baseline: Annotated[str, typer.Option(help="Policy the A/B deltas are taken against.")] = "fresh",
    num_boot: Annotated[int, typer.Option(min=100, help="Bootstrap replicates for the CIs.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only.")] = False,
    plot: Annotated[Path | None, typer.Option(
        help="Write PNG plots to DIR: sim vs real scatter, per-position acceptance per mode.")] = None,
    rope_timing: Annotated[float, typer.Option(
        min=0.0, help="Region of practical equivalence for timing deltas, ± % of the baseline.")] = 0.5,
    rope_acceptance: Annotated[float, typer.Option(
        min=0.0, help="Region of practical equivalence for acceptance length deltas, ±.")] = 0.01,
    normalise: Annotated[bool, typer.Option(
        "--normalise", help="Put each round's timings in units of the machine-speed probe taken "
        "around it before pairing (mtpsim.probe).")] = False,
    normalise_level: Annotated[bool, typer.Option(
        "--normalise-level", help="Put each round's timings in units of the reference engine's "
        "in-engine level probe (one fixed decode step timed inside the round; mtpsim.level) "
        "before pairing.")] = False,
) -> None:
    """Compare results: [b]sim vs real[/b] for every policy found in both modes (error % per
    metric and the mean absolute percentage error), and a [b]policy A/B[/b] within each mode:
    acceptance deltas with a 95 % request-level bootstrap CI, timing deltas from the paired
    per-round differences of interleaved rounds (run-real --rounds; drift cancels), each judged
    against a region of practical equivalence ("better", "worse", "no practical difference",
    "cannot tell"); and the placebo noise floor (position-0 acceptance cannot differ between
    fresh, share and share_recent, so its difference is noise).

    Example: [cyan]mtpsim compare runs/sim runs/real[/cyan] ·
    [cyan]mtpsim compare fresh=off.json share=on.json[/cyan]
    """
    from mtpsim.compare_sweep import is_sweep
    from mtpsim.report import compare as report
    from mtpsim.runs import compare as runs
    from mtpsim.verdict import Rope

    rope = Rope(timing_pct=rope_timing, acceptance_length=rope_acceptance)
    runs.check_flags(baseline, num_boot, seed)
    if plot is not None:
        from mtpsim.extras import require
        from mtpsim.fileio import output_dir

        require("--plot", "plots")
        output_dir(plot, "--plot")  # before any work
    if len(inputs) == 1 and is_sweep(Path(inputs[0])):
        found, out = runs.compare_sweep(Path(inputs[0]), baseline, num_boot, seed)
        if not (Path(inputs[0]) / "sweep.json").exists():  # written when the sweep finishes
            n = len(list((Path(inputs[0]) / "points").glob("*/point.json")))
            out["complete"] = False
            err_console.print(f"note: {inputs[0]} holds {n} point{'s' * (n != 1)} and no "
                              "sweep.json: the sweep did not finish (rerun its command to resume "
                              "it); these are the points it kept", highlight=False, soft_wrap=True)
        if as_json:
            typer.echo(dumps(out, indent=2))
        else:
            report.print_sweep(console, found)
        return
    run = runs.compare(inputs, baseline, num_boot, seed, rope, "level" if normalise_level else normalise)
    if not as_json:
        report.print_compare(console, run)
    if plot is not None:
        from mtpsim.report.plots import compare_plots

        paths = compare_plots(run.pairs(), run.by_mode, plot)
        if not as_json:
            for p in paths:
                console.print(f"plot: {p}", highlight=False)
    runs.check_something_compared(run, baseline, inputs)
    if as_json:
        typer.echo(dumps(run.out, indent=2))
