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
    from mtpsim.runs.compare import UNCERTAINTY_FILE
    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.limits import check_draws
    from mtpsim.uncertainty.run import propagate

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
        atomic_write_json(out / UNCERTAINTY_FILE, payload)
    if as_json:
        typer.echo(dumps(payload, indent=2))
        return
    tables.print_run(console, run, shown)
    if out is not None:
        console.print(f"wrote {out / UNCERTAINTY_FILE} (every draw)", highlight=False)


def print_sweep_uncertainty(experiment: str, axes, records: list, n: int, as_json: bool) -> None:
    """What `mtpsim sweep --uncertainty N` prints: one row per point and policy, or the JSON."""
    from mtpsim.report import uncertainty as tables

    keys = [a.key for a in axes]
    if as_json:
        typer.echo(dumps({"experiment": experiment, "axes": keys, "draws": n,
                          "points": [{k: v for k, v in r.items() if k != "run"} for r in records]},
                         indent=2))
        return
    tables.print_sweep(console, tables.sweep_table(experiment, keys, records, n), len(keys))
