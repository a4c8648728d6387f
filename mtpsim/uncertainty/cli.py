"""What `mtpsim simulate --uncertainty N` prints and writes."""

from __future__ import annotations

from pathlib import Path

import typer

from mtpsim.console import StdConsole
from mtpsim.fileio import dumps

console = StdConsole()
err_console = StdConsole(stderr=True)


def simulate_uncertainty(experiment: str, overrides: list[str], n: int, jobs: int | None,
                         as_json: bool, out: Path | None, metrics: str | None = None) -> None:
    from mtpsim.fileio import atomic_write_json, output_dir
    from mtpsim.report import uncertainty as tables
    from mtpsim.report.fit import print_lines, print_table
    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.limits import check_draws
    from mtpsim.uncertainty.run import ALL_ROWS, PRIOR, propagate

    check_draws(n, "--uncertainty")
    shown = tables.choose_metrics(metrics)
    if out is not None:
        output_dir(out, "--out")
    jobs = jobs or default_workers()
    show = not as_json and err_console.is_terminal
    if show:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(TextColumn("draws"), BarColumn(), MofNCompleteColumn(), console=err_console.current(),
                      transient=True) as bar:
            task = bar.add_task("draws", total=n)
            run = propagate(experiment, overrides, n, jobs,
                            progress=lambda d, t: bar.update(task, completed=d, total=t))
    else:
        run = propagate(experiment, overrides, n, jobs)
    payload = run.to_json()
    if out is not None:
        atomic_write_json(out / "uncertainty.json", payload)
    if as_json:
        typer.echo(dumps(payload, indent=2))
        return
    groups = tables.intervals_groups(run)
    print_table(console, tables.intervals_table(run, PRIOR, shown), group=groups)
    if ALL_ROWS in run.weights:
        print_table(console, tables.intervals_table(run, ALL_ROWS, shown), group=groups)
        print_table(console, tables.measured_table(run), keep=2)
        print_table(console, tables.narrowing_table(run))
        if (noise_table := tables.noise_sensitivity_table(run)) is not None:
            print_table(console, noise_table, keep=1)
    print_table(console, tables.sensitivity_table(run))
    print_lines(console, tables.lines(run))
    if out is not None:
        console.print(f"wrote {out / 'uncertainty.json'} (every draw)", highlight=False)


def sweep_uncertainty(experiment: str, axes, points, n: int, jobs: int, out: Path | None,
                      as_json: bool) -> None:
    from mtpsim.report import uncertainty as tables
    from mtpsim.report.fit import print_table
    from mtpsim.uncertainty.limits import check_draws, check_simulations
    from mtpsim.uncertainty.sweep import run_grid

    check_draws(n, "--uncertainty")
    check_simulations(n, len(points), 1, "--uncertainty", "points")
    records = run_grid(experiment, points, n, jobs, out)
    keys = [a.key for a in axes]
    if as_json:
        typer.echo(dumps({"experiment": experiment, "axes": keys, "draws": n,
                               "points": [{k: v for k, v in r.items() if k != "run"}
                                          for r in records]}, indent=2))
        return
    t = tables.sweep_table(experiment, keys, records, n)
    # cut to fit: the grid values and policy label repeat; a delta keeps its P and verdict
    print_table(console, t, keep=len(keys) + 1, group=(1, 1, 3, 1))
