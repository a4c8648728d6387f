"""`mtpsim sweep`: a grid over `--set key=v1,v2,...` axes, simulated or run for real, on this
machine or on a Ray cluster (`--cluster`). The run is mtpsim.runs.sweep's, the report
mtpsim.report.sweep's; this module parses and hands over."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from mtpsim.console import StdConsole
from mtpsim.fileio import dumps

console = StdConsole()
err_console = StdConsole(stderr=True)


def sweep(
    experiment: Annotated[Path, typer.Argument(help="Experiment TOML, e.g. experiments/pr47352.toml.")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="An axis: section.key=v1,v2,... (repeatable; the grid is every combination). "
        "One value is a plain override. Lists keep their brackets (quote them for the shell): "
        "--set 'policies=[\"fresh\",\"share\"]'."
        " A relative path (calibration.file) is from the current folder.")] = None,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, help="Worker processes (default: the usable cores), e.g. -j 2 "
        "on a shared machine. Ignored with --cluster.")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Folder for one file per point (DIR/points/<id>.json; real sweeps: DIR/points/<id>/"
        "r<R>/<policy>.json) and DIR/sweep.json; a rerun skips what is complete there (a simulated "
        "point: made by this mtpsim's code; it says what it reuses and reruns). "
        "E.g. --out runs/sweep.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the rows as JSON instead of the table, e.g. --json > rows.json.")] = False,
    plot: Annotated[Path | None, typer.Option(
        help="Write PNG plots to DIR: throughput and median TPOT against each axis, per policy, "
        "e.g. --plot runs/sweep/plots.")] = None,
    cluster: Annotated[str | None, typer.Option(
        help="Run the points as Ray tasks on a cluster: auto (the cluster this machine belongs "
        "to), ray://HOST:PORT (Ray Client) or HOST:PORT (the head's GCS address). Results come "
        "back to --out on this machine. See docs/cluster.md.")] = None,
    engine: Annotated[str | None, typer.Option(
        help="Run every point for real instead of simulating it: reference, vllm or sglang "
        "(each policy of each repeat is a `mtpsim run-real`).")] = None,
    repeats: Annotated[int, typer.Option(
        min=1, help="Real sweeps: runs per point and policy, seeds seed, seed+1, ...; policies "
        "alternate A B A B on one node.")] = 1,
    retries: Annotated[int, typer.Option(
        min=0, help="Reruns of a point whose node died or whose run failed, before it is "
        "recorded as failed (DIR/points/<id>/failed.json).")] = 2,
    server: Annotated[bool, typer.Option(
        "--server", help="Real sweeps on the reference engine: behind `mtpsim serve-reference` "
        "(127.0.0.1 on its node), measured over HTTP as --engine vllm is.")] = False,
    uncertainty: Annotated[int | None, typer.Option(
        help="Per point, N draws of the \\[uncertainty] priors (as simulate --uncertainty): "
        "medians, intervals and the throughput delta's P(> 0) and verdict; --out keeps each "
        "point's draws; with --cluster the draws run on the cluster. E.g. --uncertainty 32.")] = None,
) -> None:
    """Simulate (or, with --engine, run for real) every point of a grid and print one row per
    point and policy.

    Every point is validated, and with --cluster the cluster checked (reachable, a node large
    enough for a point, the engine importable on every node), before anything runs. A k beyond
    the spec's measured acceptance positions repeats the last conditional rate (printed as a note).
    Example: [cyan]mtpsim sweep experiments/pr47352.toml --set speculative.num_speculative_tokens=1,2,3,4,5
    --set workload.max_concurrency=1,4,16,64 --out runs/sweep[/cyan] ·
    [cyan]mtpsim sweep experiments/reference-cpu.toml --engine reference --repeats 4
    --set speculative.index_topk=32,64 --cluster auto --out runs/ref-grid[/cyan]
    """
    from mtpsim.report import sweep as report
    from mtpsim.runs import sweep as runs
    from mtpsim.runs.executor import default_workers

    sets = list(set_ or [])
    axes, points, out = runs.prepare(experiment, sets, engine=engine, server=server, repeats=repeats,
                                     cluster=cluster, out=out, plot=plot, uncertainty=uncertainty)
    interrupted = _on_interrupt(out, len(points), _rerun_argv(experiment, sets, jobs, engine,
                                                              repeats, server))
    if out is not None and engine is None and uncertainty is None:
        _say_resume(out, points, str(experiment))
    bar = report.points_bar(err_console, enabled=not as_json and err_console.is_terminal)
    with runs.session(cluster) as nodes:
        if uncertainty is not None:
            _sweep_uncertainty(experiment, axes, points, uncertainty, jobs, nodes, retries, out,
                               as_json)
            return
        if engine is None:
            run = runs.simulated(experiment, sets, axes, points, out, jobs or default_workers(), nodes,
                                 retries, bar, interrupted)
        else:
            from mtpsim.real_sweep import RealPlan

            assert out is not None
            run = runs.real(experiment, sets, axes, points, out, nodes,
                            RealPlan(engine, repeats, server, retries), bar, interrupted)
        if as_json:
            typer.echo(dumps(report.sweep_json(run), indent=2))
            if plot is not None:  # written as without --json; stdout stays one JSON document
                from mtpsim.report.plots import sweep_plots

                if not sweep_plots(run.rows, run.keys, plot):
                    err_console.print(f"note: {report.NO_PLOT}", highlight=False)
        else:
            report.print_sweep(console, run, plot, out)
        report.print_failed(err_console, run.failed)
        if run.failed:
            raise typer.Exit(1)


def _on_interrupt(out: Path | None, points: int, rerun: list[str]) -> Any:
    """Ctrl-C after `kept` points: say what was kept and how to resume; exit 130."""
    from mtpsim.report import sweep as report

    def interrupted(kept: int) -> typer.Exit:
        err_console.print(report.interrupted(out, kept, points, rerun), highlight=False,
                          markup=False, soft_wrap=True)
        return typer.Exit(130)

    return interrupted


def _say_resume(out: Path, points: list, experiment: str) -> None:
    """On stderr, what the point files already in --out give: reused, rerun and why, new."""
    from mtpsim.sweep import resume_lines

    for line in resume_lines(out, points, experiment):
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)


def _rerun_argv(experiment: Path, sets: list[str], jobs: int | None, engine: str | None,
                repeats: int, server: bool) -> list[str]:
    """The command line that resumes this sweep (printed when it is interrupted)."""
    from mtpsim.report import sweep as report

    if engine is None:
        return report.rerun_argv(experiment, sets) + (["-j", str(jobs)] if jobs else [])
    return report.rerun_argv(experiment, sets, engine=engine, repeats=repeats, server=server)


def _sweep_uncertainty(experiment: Path, axes: list, points: list, draws: int, jobs: int | None,
                       nodes: Any, retries: int, out: Path | None, as_json: bool) -> None:
    """`--uncertainty N`: every point's draws, then the table (or JSON) of their intervals."""
    from mtpsim.runs import sweep as runs
    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.cli import print_sweep_uncertainty
    from mtpsim.uncertainty.sweep import resume_lines

    for line in resume_lines(out, points, draws) if out is not None else []:
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)
    records = runs.uncertain(experiment, points, draws, jobs or default_workers(), nodes, retries,
                             out)
    print_sweep_uncertainty(str(experiment), axes, records, draws, as_json)
