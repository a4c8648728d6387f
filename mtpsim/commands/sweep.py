"""`mtpsim sweep`: a grid over `--set key=v1,v2,...` axes, simulated or run for real, on this
machine or on a Ray cluster (`--cluster`)."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from mtpsim.console import StdConsole
from mtpsim.fileio import dumps

console = StdConsole()
err_console = StdConsole(stderr=True)

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


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def sweep(
    experiment: Annotated[Path, typer.Argument(help="Experiment TOML, e.g. experiments/pr47352.toml.")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="An axis: section.key=v1,v2,... (repeatable; the grid is every combination). "
        "One value is a plain override. Lists keep their brackets: policies=[\"fresh\",\"share\"].")] = None,
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, help="Worker processes (default: the usable cores), e.g. -j 2 "
        "on a shared machine. Ignored with --cluster.")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Folder for one file per point (DIR/points/<id>.json; real sweeps: DIR/points/<id>/"
        "r<R>/<policy>.json) and DIR/sweep.json; a rerun skips what is complete there. "
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
        help="Per point, N draws of the [uncertainty] priors (as simulate --uncertainty): "
        "medians, intervals and the throughput delta's P(> 0) and verdict; --out keeps each "
        "point's draws. E.g. --uncertainty 32.")] = None,
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
    from mtpsim import sweep as sw
    from mtpsim.errors import UserError
    from mtpsim.fileio import output_dir
    from mtpsim.real import ENGINES, backend
    from mtpsim.runs.executor import default_workers

    real = backend(engine, server) if engine is not None else None  # an unknown engine: one line
    if real is None and (repeats != 1 or server):
        raise UserError(None, "--repeats" if repeats != 1 else "--server", "applies to real "
                        f"sweeps (--engine {'|'.join(ENGINES)})")
    from mtpsim.extras import require, require_engine

    if engine is not None:
        require_engine(engine, server)
    if cluster is not None:
        require("--cluster", "ray")
    if plot is not None:
        require("--plot", "plots")
    axes, points = sw.build_points(str(experiment), list(set_ or []),
                                   check_memory=real is None or real.caps.gpus)
    if engine is not None:  # each real point waits for its arrivals on the wall clock
        from mtpsim.commands.run_real import _check_wall_clock
        from mtpsim.spec import load_experiment

        for point in points:
            _check_wall_clock(load_experiment(str(experiment), list(point.overrides)))
    if engine is not None and out is None:
        out = Path("runs") / f"{experiment.stem}-{engine}-sweep"
    for folder, flag in ((out, "--out"), (plot, "--plot")):
        if folder is not None:
            output_dir(folder, flag)
    if uncertainty is not None:
        if engine is not None or cluster is not None:
            raise UserError(None, "--uncertainty", "expected a local simulation sweep (not with "
                            "--engine or --cluster)")
        from mtpsim.uncertainty.cli import sweep_uncertainty

        sweep_uncertainty(str(experiment), axes, points, uncertainty, jobs or default_workers(),
                          out, as_json)
        return
    nodes = None
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        if cluster is not None:
            from mtpsim.cluster.connect import connect

            # From the moment the driver joins, Ray's listener may print (e.g. a node that died
            # before this run): to stderr, never into the table or --json (see _on_cluster).
            _RAY_STDOUT.enter_context(contextlib.redirect_stdout(sys.stderr))
            nodes = connect(cluster)
        if engine is None:
            _simulated(experiment, set_, axes, points, out, as_json, plot, jobs, nodes, retries)
        else:
            from mtpsim.real_sweep import RealPlan

            assert out is not None
            _real(experiment, set_, axes, points, out, as_json, plot, nodes,
                  RealPlan(engine, repeats, server, retries))
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if nodes is not None:
            from mtpsim.cluster.connect import disconnect

            disconnect()
        _RAY_STDOUT.close()


def _where(nodes: Any, jobs: int) -> str:
    if nodes is None:
        return f"on {jobs} worker{'s' if jobs > 1 else ''}"
    return f"on a Ray cluster of {len(nodes)} nodes ({sum(n.cpus for n in nodes):g} CPUs, " \
           f"{sum(n.gpus for n in nodes):g} GPUs)"


# Holds the stdout redirect from joining the Ray cluster until leaving it.
_RAY_STDOUT = contextlib.ExitStack()


@contextlib.contextmanager
def _on_cluster(nodes: Any) -> Iterator[None]:
    """While points run on Ray: Ray's own messages (a node died, ...) go to stderr, never into
    the table or the --json output; the driver leaves the cluster when the points are done."""
    if nodes is None:
        yield
        return
    from mtpsim.cluster.connect import disconnect

    try:
        yield
    finally:
        disconnect()  # Ray's listener thread stops here; only then may stdout be restored
        _RAY_STDOUT.close()


def _progress(as_json: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[state]}"), TimeElapsedColumn(),
                    console=err_console.current(), transient=True, disable=as_json)


def _interrupted(out: Path | None, kept: int, total: int, argv: list[str]) -> typer.Exit:
    from mtpsim.report.interrupt import interrupted_line, resume_argv

    done = [f"{kept} finished points in {out / 'points'}"] if out and kept else []
    resume = resume_argv("sweep", argv[0], str(out), argv[1:]) if out else None
    err_console.print(interrupted_line(done, [f"{total - kept} points"], resume),
                      highlight=False, markup=False, soft_wrap=True)
    return typer.Exit(130)


def _rerun_argv(experiment: Path, set_: list[str] | None, **flags: Any) -> list[str]:
    """The experiment and the options a rerun needs (for the interrupted line)."""
    opts = [x for s in set_ or [] for x in ("--set", s)]
    for name, value in flags.items():
        if value not in (None, False):
            opts += [f"--{name}"] if value is True else [f"--{name}", str(value)]
    return [str(experiment), *opts]


def _simulated(experiment: Path, set_: list[str] | None, axes: list, points: list, out: Path | None,
               as_json: bool, plot: Path | None, jobs: int | None, nodes: Any, retries: int) -> None:
    from mtpsim import sweep as sw
    from mtpsim.runs.executor import default_workers

    rerun = _rerun_argv(experiment, set_) + (["-j", str(jobs)] if jobs else [])
    jobs = jobs or default_workers()
    failed: list[str] = []
    if nodes is None:
        gen = sw.run_points(str(experiment), points, out, jobs)
    else:
        from mtpsim.cluster.connect import require_engine, require_room
        from mtpsim.cluster.run import simulate_on_ray

        require_room(nodes, 0, 1, "a simulation batch", "--cluster", "CPU")
        require_engine(nodes, "simulate")
        gen = simulate_on_ray(str(experiment), points, out, nodes, retries, failed)
    records: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with _on_cluster(nodes):
        try:
            with _progress(as_json) as bar:
                task = bar.add_task("points", total=len(points), state="")
                for rec in gen:
                    records[rec["point_id"]] = rec
                    bar.update(task, completed=len(records),
                               state=f"failed {len(failed)}" if failed else "")
        except KeyboardInterrupt:
            done = len(list((out / "points").glob("*.json"))) if out else 0  # workers write them
            raise _interrupted(out, done, len(points), rerun) from None
        finally:
            gen.close()
    wall = time.perf_counter() - t0
    ordered = [records[p.point_id] for p in points if p.point_id in records]
    rows = sw.rows(ordered, axes)
    resumed = sum(1 for r in ordered if r.get("resumed"))
    if out is not None:
        from mtpsim.fileio import atomic_write_json

        atomic_write_json(out / "sweep.json", {"experiment": str(experiment), "sets": list(set_ or []),
                                               "axes": [a.key for a in axes], "rows": rows})
    if as_json:
        typer.echo(dumps({"experiment": str(experiment), "axes": [a.key for a in axes],
                               "points": len(points), "resumed": resumed, "wall_s": wall,
                               "failed": failed, "rows": rows}, indent=2))
    else:
        keys = [a.key for a in axes]
        from mtpsim.report.fit import print_table
        from mtpsim.report.sweep import sweep_table

        print_table(console, sweep_table(rows, keys, f"{experiment} sweep: {_size(len(points), rows)} "
                                    "(simulated)"), keep=len(keys) + 1)
        notes = sorted({n for r in ordered for n in r.get("notes", [])})
        for n in notes:
            console.print(f"note: {n}", highlight=False)
        if plot is not None:
            from mtpsim.report.plots import sweep_plots

            for p in sweep_plots(rows, keys, plot):
                console.print(f"plot: {p}", highlight=False)
        kept = f" ({resumed} resumed from {out})" if out is not None else ""  # no --out: none kept
        console.print(f"{len(points)} points{kept} in {wall:.1f} s wall {_where(nodes, jobs)}",
                      highlight=False)
    _report_failed(failed)


def _report_failed(failed: list[str]) -> None:
    for line in failed:
        err_console.print(f"failed: {line}", highlight=False, soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def _real(experiment: Path, set_: list[str] | None, axes: list, points: list, out: Path,
          as_json: bool, plot: Path | None, nodes: Any, plan: Any) -> None:
    from mtpsim import real_sweep as rs
    from mtpsim.sweep import load_point

    if nodes is None:
        gen = rs.run_local(str(experiment), points, plan, out)
    else:
        from mtpsim.cluster.run import check_real, real_on_ray

        check_real(str(experiment), points, plan, nodes)
        gen = real_on_ray(str(experiment), points, plan, out)
    counts = {"done": 0, "resumed": 0, "failed": 0}
    failed: list[str] = []
    t0 = time.perf_counter()
    with _on_cluster(nodes):
        try:
            with _progress(as_json) as bar:
                task = bar.add_task("points", total=len(points), state="")
                for ev in gen:
                    counts[ev.status] += 1
                    if ev.status == "failed":
                        failed.append(f"{', '.join(f'{k}={v}' for k, v in ev.point.values.items())}"
                                      f" ({ev.point.point_id}): {ev.reason}")
                    finished = sum(counts.values())
                    running = min(len(points) - finished, len(nodes) if nodes else 1)
                    bar.update(task, completed=finished,
                               state=f"running {running} · failed {counts['failed']}")
        except KeyboardInterrupt:
            raise _interrupted(out, counts["done"] + counts["resumed"], len(points), _rerun_argv(
                experiment, set_, engine=plan.engine, repeats=plan.repeats,
                server=plan.server)) from None
        finally:
            gen.close()
    wall = time.perf_counter() - t0
    policies = list(dict.fromkeys(p for pt in points
                                  for p in load_point(str(experiment), pt.overrides).policies))
    rows = rs.rows(out, points, axes, policies, plan)
    from mtpsim.fileio import atomic_write_json

    summary = {"experiment": str(experiment), "sets": list(set_ or []), "engine": plan.engine,
               "repeats": plan.repeats, "axes": [a.key for a in axes], "rows": rows,
               "failed": failed}
    atomic_write_json(out / "sweep.json", summary)
    if as_json:
        typer.echo(dumps({**summary, "points": len(points), "resumed": counts["resumed"],
                               "wall_s": wall}, indent=2))
    else:
        keys = [a.key for a in axes]
        from mtpsim.report.fit import print_table
        from mtpsim.report.sweep import sweep_table

        print_table(console, sweep_table(rows, keys, f"{experiment} sweep: {len(points)} points x policies "
                                    f"({plan.engine}, mean of {plan.repeats} repeats)"),
                    keep=len(keys) + 1)
        if plot is not None:
            from mtpsim.report.plots import sweep_plots

            for p in sweep_plots(rows, keys, plot):
                console.print(f"plot: {p}", highlight=False)
        console.print(f"{len(points)} points ({counts['resumed']} resumed, {counts['failed']} failed) "
                      f"in {wall:.1f} s wall {_where(nodes, 1)}; results in {out}/points "
                      f"(compare: mtpsim compare {out})", highlight=False)
    _report_failed(failed)
