"""What `mtpsim sweep` prints: its progress bar, one table row per grid point and policy, the
closing line, --json, the failed points and the Ctrl-C line."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from mtpsim.report.numbers import number, signed

if TYPE_CHECKING:
    from mtpsim.console import StdConsole
    from mtpsim.runs.sweep import SweepRun

Tick = Callable[[int, str], None]  # (points finished, state text)

_COLUMNS = (("output_throughput", "out tok/s", ",.0f"), ("median_tpot_ms", "TPOT ms", ".2f"),
            ("median_ttft_ms", "TTFT ms", ",.0f"), ("spec_decode_acceptance_length", "acc len", ".3f"),
            ("request_throughput", "req/s", ".3f"))


# Short axis headers, so a grid fits the terminal; the caption spells out the ones used.
_SHORT = {"num_speculative_tokens": "k", "max_concurrency": "conc", "num_prompts": "prompts",
          "input_len": "in", "output_len": "out", "index_topk": "top-k", "request_rate": "rate",
          "max_num_seqs": "seqs", "max_num_batched_tokens": "tokens"}


def sweep_table(rows: list[dict[str, Any]], keys: list[str], title: str) -> Table:
    """One row per grid point and policy; Δ tok/s against the point's first policy."""
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
        point = tuple(json.dumps(r[k], sort_keys=True) for k in keys)  # a value may be a list
        tput = r.get("output_throughput", math.nan)
        if point not in base:
            base[point], delta = tput, ""
        else:
            delta = signed(100 * (tput / base[point] - 1), 2, "%")
        t.add_row(*[str(r[k]) for k in keys], r["policy"],
                  *[number(r.get(m), f) for m, _, f in _COLUMNS], delta)
    return t


def points_bar(console: StdConsole, enabled: bool) -> Callable[[int], AbstractContextManager[Tick]]:
    """The sweep's transient bar on stderr, as a factory of total points (see runs.sweep.Bar)."""

    @contextlib.contextmanager
    def bar(total: int) -> Iterator[Tick]:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("{task.fields[state]}"), TimeElapsedColumn(),
                      console=console.current(), transient=True, disable=not enabled) as progress:
            task = progress.add_task("points", total=total, state="")
            yield lambda done, state: progress.update(task, completed=done, state=state)

    return bar


def rerun_argv(experiment: Path, sets: list[str], **flags: Any) -> list[str]:
    """The experiment and the options a rerun needs (for the interrupted line)."""
    opts = [x for s in sets for x in ("--set", s)]
    for name, value in flags.items():
        if value not in (None, False):
            opts += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return [str(experiment), *opts]


def interrupted(out: Path | None, kept: int, total: int, argv: list[str]) -> str:
    """The Ctrl-C line: the finished points kept in --out, those not, and the rerun."""
    from mtpsim.report.interrupt import interrupted_line, resume_argv

    done = [f"{_points(kept)} finished in {out / 'points'}"] if out and kept else []
    resume = resume_argv("sweep", argv[0], str(out), argv[1:]) if out else None
    return interrupted_line(done, [_points(total - kept)], resume)


def _points(n: int) -> str:
    return f"{n} point{'s' * (n != 1)}"


def sweep_json(run: SweepRun) -> dict[str, Any]:
    """What --json prints."""
    if run.plan is None:
        from mtpsim.sweep import json_rows

        return {"experiment": run.experiment, "axes": run.keys, "points": run.points,
                "resumed": run.resumed, "wall_s": run.wall_s, "failed": run.failed,
                "rows": json_rows(run.rows, run.keys)}
    from mtpsim.runs.sweep import real_summary

    return {**real_summary(run), "points": run.points, "resumed": run.resumed, "wall_s": run.wall_s}


# the grid had an axis to plot (sweep checks first), but its points did not finish
NO_PLOT = "no plot: no axis has two or more finished values to plot against"


def print_sweep(console: StdConsole, run: SweepRun, plot: Path | None = None,
                out: Path | None = None) -> None:
    """The table, the notes, the plots written to `plot` and the closing line."""
    from mtpsim.report.fit import print_table

    if run.plan is None:
        title = f"{run.experiment} sweep: {_size(run.points, run.rows)} (simulated)"
    else:
        repeats = run.plan.repeats
        title = (f"{run.experiment} sweep: {_size(run.points, run.rows)} ({run.plan.engine}, "
                 + (f"mean of {repeats} repeats)" if repeats > 1 else "1 repeat)"))
    print_table(console, sweep_table(run.rows, run.keys, title), keep=len(run.keys) + 1)
    for n in run.notes:
        console.print(f"note: {n}", highlight=False)
    if plot is not None:
        from mtpsim.report.plots import sweep_plots

        written = sweep_plots(run.rows, run.keys, plot)
        for p in written:
            console.print(f"plot: {p}", highlight=False)
        if not written:
            console.print(f"note: {NO_PLOT}", highlight=False)
    if run.plan is None:
        kept = f" ({run.resumed} resumed from {out})" if out is not None else ""  # no --out: none kept
        console.print(f"{run.points} point{'s' * (run.points != 1)}{kept} in {run.wall_s:.1f} s wall "
                      f"{_where(run.nodes, run.workers)}", highlight=False)
    else:
        console.print(f"{run.points} point{'s' * (run.points != 1)} ({run.resumed} resumed, "
                      f"{len(run.failed)} failed) "
                      f"in {run.wall_s:.1f} s wall {_where(run.nodes, 1)}; results in {out}/points "
                      f"(compare: mtpsim compare {out})", highlight=False)


def print_failed(console: StdConsole, failed: list[str]) -> None:
    """One stderr line per failed point."""
    for line in failed:
        console.print(f"failed: {line}", highlight=False, soft_wrap=True)


def _size(points: int, rows: list[dict]) -> str:
    """'20 points x 2 policies', or '3 points, 5 policy runs' when a policies axis varies them."""
    per_point: dict[str, int] = {}
    for r in rows:
        per_point[r.get("point_id", id(r))] = per_point.get(r.get("point_id", id(r)), 0) + 1
    counts = set(per_point.values())
    if len(counts) == 1 and "point_id" in (rows[0] if rows else {}):
        n = counts.pop()
        return f"{points} point{'s' * (points != 1)} x {n} polic{'ies' if n != 1 else 'y'}"
    return f"{points} point{'s' * (points != 1)}, {len(rows)} policy runs"


def _where(nodes: Any, jobs: int) -> str:
    if nodes is None:
        return f"on {jobs} worker{'s' if jobs > 1 else ''}"
    return f"on a Ray cluster of {len(nodes)} nodes ({sum(n.cpus for n in nodes):g} CPUs, " \
           f"{sum(n.gpus for n in nodes):g} GPUs)"
