"""What `mtpsim simulate --uncertainty N` prints and writes."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def simulate_uncertainty(experiment: str, overrides: list[str], n: int, jobs: int | None,
                         as_json: bool, out: Path | None) -> None:
    from mtpsim.errors import UserError
    from mtpsim.fileio import atomic_write_json, output_dir
    from mtpsim.sweep import default_jobs
    from mtpsim.uncertainty import tables
    from mtpsim.uncertainty.run import ALL_ROWS, PRIOR, propagate

    if n < 2:
        raise UserError(None, "--uncertainty", f"expected a number of draws >= 2, got {n}")
    if out is not None:
        output_dir(out, "--out")
    jobs = jobs or default_jobs()
    show = not as_json and err_console.is_terminal
    if show:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(TextColumn("draws"), BarColumn(), MofNCompleteColumn(), console=err_console,
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
        typer.echo(json.dumps(payload, indent=2, default=float))
        return
    console.print(tables.intervals_table(run, PRIOR))
    if ALL_ROWS in run.weights:
        console.print(tables.intervals_table(run, ALL_ROWS))
        console.print(tables.measured_table(run))
        console.print(tables.narrowing_table(run))
    console.print(tables.sensitivity_table(run))
    for line in tables.lines(run):
        console.print(line, highlight=False, soft_wrap=True)
    if out is not None:
        console.print(f"wrote {out / 'uncertainty.json'} (every draw)", highlight=False)
