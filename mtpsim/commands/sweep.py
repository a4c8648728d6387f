"""`mtpsim sweep`: a grid of simulations over `--set key=v1,v2,...` axes."""

from __future__ import annotations

import json
import math
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)

_COLUMNS = (("output_throughput", "out tok/s", "{:,.0f}"), ("median_tpot_ms", "TPOT ms", "{:.2f}"),
            ("median_ttft_ms", "TTFT ms", "{:,.0f}"), ("spec_decode_acceptance_length", "acc len", "{:.3f}"),
            ("request_throughput", "req/s", "{:.3f}"))


def _fmt(fmt: str, v: Any) -> str:
    return "-" if not isinstance(v, int | float) or math.isnan(v) else fmt.format(v)


# Short axis headers, so a grid fits the terminal; the caption spells out the ones used.
_SHORT = {"num_speculative_tokens": "k", "max_concurrency": "conc", "num_prompts": "prompts",
          "input_len": "in", "output_len": "out", "index_topk": "top-k", "request_rate": "rate",
          "max_num_seqs": "seqs", "max_num_batched_tokens": "tokens"}


def _table(rows: list[dict[str, Any]], keys: list[str], title: str) -> Table:
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              caption_justify="left")
    short = [_SHORT.get(k.split(".")[-1], k.split(".")[-1]) for k in keys]
    legend = [f"{s} = {k}" for s, k in zip(short, keys, strict=True) if s != k.split(".")[-1]]
    t.caption = "; ".join(legend) or None
    for s in short:
        t.add_column(s, justify="right")
    t.add_column("policy")
    for _, label, _ in _COLUMNS:
        t.add_column(label, justify="right")
    t.add_column("Δ tok/s", justify="right")
    base: dict[tuple, float] = {}
    for r in rows:
        point = tuple(r[k] for k in keys)
        tput = r.get("output_throughput", math.nan)
        if point not in base:
            base[point], delta = tput, ""
        else:
            delta = f"{100 * (tput / base[point] - 1):+.2f}%"
        t.add_row(*[str(r[k]) for k in keys], r["policy"],
                  *[_fmt(f, r.get(m)) for m, _, f in _COLUMNS], delta)
    return t


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def sweep(
    experiment: Annotated[Path, typer.Argument(help="Experiment TOML, e.g. experiments/pr47352.toml.")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="An axis: section.key=v1,v2,... (repeatable; the grid is every combination). "
        "One value is a plain override. Lists keep their brackets: policies=[\"fresh\",\"share\"].")] = None,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, help="Worker processes (default: the usable cores), e.g. -j 2 "
        "on a shared machine.")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Folder for one file per point (DIR/points/<id>.json) and DIR/sweep.json; a rerun "
        "skips the points already there. E.g. --out runs/sweep.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the rows as JSON instead of the table, e.g. --json > rows.json.")] = False,
    plot: Annotated[Path | None, typer.Option(
        help="Write PNG plots to DIR: throughput and median TPOT against each axis, per policy, "
        "e.g. --plot runs/sweep/plots.")] = None,
    uncertainty: Annotated[int | None, typer.Option(
        help="Per point, N draws of the [uncertainty] priors (as simulate --uncertainty): "
        "medians, intervals and the throughput delta's P(> 0) and verdict; --out keeps each "
        "point's draws. E.g. --uncertainty 32.")] = None,
) -> None:
    """Simulate every point of a grid in parallel and print one row per point and policy.

    Every point is validated before anything runs. A k beyond the spec's measured acceptance
    positions repeats the last conditional rate (printed as a note).
    Example: [cyan]mtpsim sweep experiments/pr47352.toml --set speculative.num_speculative_tokens=1,2,3,4,5
    --set workload.max_concurrency=1,4,16,64 --out runs/sweep[/cyan]
    """
    from mtpsim import sweep as sw
    from mtpsim.fileio import output_dir

    axes, points = sw.build_points(str(experiment), list(set_ or []))
    for folder, flag in ((out, "--out"), (plot, "--plot")):
        if folder is not None:
            output_dir(folder, flag)
    jobs = jobs or sw.default_jobs()
    if uncertainty is not None:
        from mtpsim.uncertainty.cli import sweep_uncertainty

        sweep_uncertainty(str(experiment), axes, points, uncertainty, jobs, out, as_json)
        return
    records: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    gen = sw.run_points(str(experiment), points, out, jobs)
    try:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err_console, transient=True, disable=as_json) as bar:
            task = bar.add_task("points", total=len(points))
            for rec in gen:
                records[rec["point_id"]] = rec
                bar.update(task, completed=len(records))
    except KeyboardInterrupt:
        from mtpsim.report.interrupt import interrupted_line, resume_argv

        done = len(list((out / "points").glob("*.json"))) if out else 0  # workers write them
        left = len(points) - done
        kept = [f"{done} finished points in {out / 'points'}"] if done else []
        opts = [x for s in set_ or [] for x in ("--set", s)] + (["-j", str(jobs)] if jobs else [])
        resume = resume_argv("sweep", str(experiment), str(out), opts) if out else None
        err_console.print(interrupted_line(kept, [f"{left if out else len(points)} points"], resume),
                          highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    finally:
        gen.close()
        signal.signal(signal.SIGTERM, old_term)
    wall = time.perf_counter() - t0
    ordered = [records[p.point_id] for p in points]
    rows = sw.rows(ordered, axes)
    resumed = sum(1 for r in ordered if r.get("resumed"))
    if out is not None:
        from mtpsim.fileio import atomic_write_json

        atomic_write_json(out / "sweep.json", {"experiment": str(experiment), "sets": list(set_ or []),
                                               "axes": [a.key for a in axes], "rows": rows})
    if as_json:
        typer.echo(json.dumps({"experiment": str(experiment), "axes": [a.key for a in axes],
                               "points": len(points), "resumed": resumed, "wall_s": wall,
                               "rows": rows}, indent=2))
        return
    keys = [a.key for a in axes]
    from mtpsim.report.fit import print_table

    print_table(console, _table(rows, keys, f"{experiment} sweep: {len(points)} points x policies "
                                "(simulated)"), keep=len(keys) + 1)
    notes = sorted({n for r in ordered for n in r.get("notes", [])})
    for n in notes:
        console.print(f"note: {n}", highlight=False)
    if plot is not None:
        from mtpsim.figures import sweep_plots

        for p in sweep_plots(rows, keys, plot):
            console.print(f"plot: {p}", highlight=False)
    console.print(f"{len(points)} points ({resumed} resumed from {out}) in {wall:.1f} s wall "
                  f"on {jobs} worker{'s' if jobs > 1 else ''}", highlight=False)
