"""`mtpsim advise`: which k and policy to deploy, with intervals, from a deployment file. The run
is mtpsim.runs.advise's, the report mtpsim.report.advise's; this module parses and hands over."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mtpsim.console import StdConsole
from mtpsim.fileio import dumps

console = StdConsole()
err_console = StdConsole(stderr=True)


def advise(
    deployment: Annotated[Path, typer.Argument(
        help="Deployment TOML: \\[deployment] model, gpu, tp (quantization, max_num_seqs, "
        "max_model_len); \\[workload] context_lengths, "
        "context_weights, concurrency, output_len, temperature; \\[advise] k, policies, draws, "
        "max_draws. "
        "E.g. experiments/advise-deepseek-v3.2-b200.toml.")],
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, help="Worker processes (default: the usable cores).")] = None,
    draws: Annotated[int | None, typer.Option(
        help="Parameter draws of the first stage (default: the file's \\[advise] draws, else 64), "
        "rounded up to R replicates x a power of two, R = 16 (R = the draws below 16: 3 runs 3, 20 "
        "runs 32); alone, a fixed budget of that one stage, e.g. --draws 32 for a quick look.")] = None,
    max_draws: Annotated[int | None, typer.Option(
        help="The most draws: while an interval end's Monte Carlo SE is above \\[uncertainty] "
        "mc_se_target each stage doubles the draws, if the total stays within this (default: the "
        "file's \\[advise] max_draws, else 256; at least the first stage's rounded draws), e.g. "
        "--max-draws 1024.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    point_dir: Annotated[Path, typer.Option(
        help="Where a 'cannot tell' verdict writes the experiment file of the measurement that "
        "would decide it (the printed command runs it), e.g. --point-dir runs/advise.")]
    = Path("runs/advise"),
    plot: Annotated[Path | None, typer.Option(
        help="Write DIR/advise-gain.png: share vs fresh throughput gain against context, "
        "median and interval band per k. E.g. --plot runs/advise.")] = None,
) -> None:
    """Recommend (k, policy) for a deployment: expected output throughput and median TPOT per
    k and policy with intervals, the gain over the best [cyan]fresh[/cyan] setting with
    P(gain > 0), and "cannot tell" plus the measurement that would decide where no choice is
    robust.

    Every (k, context, concurrency) cell runs each policy on the same draws of the spec's
    \\[uncertainty] priors (16 scrambled Sobol replicates; each draw at 64 discrepancy scores).

    Draws double until each quoted delta end's Monte Carlo SE (from the replicates' spread) is at
    most 0.1 points, or --max-draws; the MC SE and effective draws print beside share vs fresh.
    Example: [cyan]mtpsim advise experiments/advise-deepseek-v3.2-b200.toml[/cyan]
    """
    from mtpsim.fileio import future_dir, output_dir
    from mtpsim.report import advise as report
    from mtpsim.runs import advise as runs
    from mtpsim.runs.executor import default_workers

    dep = runs.load(deployment, draws, max_draws)
    if plot is not None:
        from mtpsim.extras import require

        runs.check_plot(dep, deployment)
        require("--plot", "plots")
        output_dir(plot, "--plot")
    future_dir(point_dir, "--point-dir")  # written only on a 'cannot tell': checked, not made
    with report.cells_bar(err_console, enabled=not as_json and err_console.is_terminal) as bar:
        run = runs.advise(dep, jobs or default_workers(), point_dir, progress=bar)
    verdict = report.lines(run)
    if as_json:
        typer.echo(dumps(report.advise_json(deployment, run, verdict), indent=2))
        if plot is not None:  # written as without --json; stdout stays one JSON document
            from mtpsim.report.plots import gain_plot

            gain_plot(run.advice, run.prob, plot / "advise-gain.png")
        return
    report.print_advice(console, run, verdict, plot)
