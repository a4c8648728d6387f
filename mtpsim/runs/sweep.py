"""The run behind `mtpsim sweep`: the grid checked, its points run on local workers or a Ray
cluster (simulated, or for real with --engine), and DIR/sweep.json written. `mtpsim.report.sweep`
renders what this returns; the command only parses, calls and hands over."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass

# The progress bar for `total` points: a context yielding tick(points finished, state text).
Bar = Callable[[int], contextlib.AbstractContextManager[Callable[[int, str], None]]]
# Ctrl-C after `kept` finished points: the exception the run raises in its place.
Interrupted = Callable[[int], BaseException]


@dataclass(slots=True)
class SweepRun:
    """A finished grid: one row per point and policy, and what the report says beside them."""

    experiment: str  # the path as given
    sets: list[str]  # the --set texts
    keys: list[str]  # the axes' spec keys
    points: int
    rows: list[dict[str, Any]]
    wall_s: float
    resumed: int  # points found complete in --out
    failed: list[str] = field(default_factory=list)  # "<values> (<id>): <reason>" per failed point
    notes: list[str] = field(default_factory=list)  # simulated: the points' notes, sorted
    nodes: Any = None  # the Ray cluster's nodes, None on this machine
    workers: int = 1  # local worker processes
    plan: Any = None  # real sweeps: mtpsim.real_sweep.RealPlan


def prepare(experiment: Path, sets: list[str], *, engine: str | None, server: bool, repeats: int,
            cluster: str | None, out: Path | None, plot: Path | None,
            uncertainty: int | None = None) -> tuple[list, list, Path | None]:
    """Flags, extras, every point and the output folders checked before anything runs: the axes,
    the points and the --out folder (a real sweep's default when not given)."""
    from mtpsim import sweep as sw
    from mtpsim.errors import UserError
    from mtpsim.extras import require, require_engine
    from mtpsim.fileio import output_dir
    from mtpsim.real import ENGINES, backend

    real = backend(engine, server) if engine is not None else None  # an unknown engine: one line
    if real is None and (repeats != 1 or server):
        raise UserError(None, "--repeats" if repeats != 1 else "--server", "applies to real "
                        f"sweeps (--engine {'|'.join(ENGINES)})")
    if engine is not None:
        require_engine(engine, server)
    if cluster is not None:
        require("--cluster", "ray")
    if plot is not None:
        require("--plot", "plots")
    if uncertainty is not None and engine is not None:
        raise UserError(None, "--uncertainty", "expected a simulation sweep (not with --engine)")
    axes, points = sw.build_points(str(experiment), sets, check_memory=real is None or real.caps.gpus,
                                    kind="real" if real is not None else
                                    "uncertainty" if uncertainty is not None else "simulation")
    if uncertainty is not None:
        from mtpsim.uncertainty.limits import check_draws, check_simulations

        check_draws(uncertainty, "--uncertainty")
        check_simulations(uncertainty, len(points), 1, "--uncertainty", "points")
    if real is not None:  # each real point waits for its arrivals on the wall clock, and
        # runs only what its engine can (run-real's refusals, per point, before any runs)
        from mtpsim.runs.real import check_wall_clock, refuse_plain_decoding
        from mtpsim.spec import load_experiment

        for point in points:
            exp = load_experiment(str(experiment), list(point.overrides))
            try:
                check_wall_clock(exp)
                refuse_plain_decoding(exp, "sweep --engine")
                real.refuse(exp, exp.policies)
            except UserError as e:  # name the grid point whose values it refuses
                at = ", ".join(f"{k}={v}" for k, v in point.values.items())
                raise type(e)(e.source, e.field, f"{e.expected} (at {at})" if at else e.expected) from None
    if plot is not None and not any(len(a.values) >= 2 for a in axes):  # before any folder or run
        raise UserError(None, "--plot", "expected a grid with an axis of two or more values to plot "
                        "against (e.g. --set workload.max_concurrency=1,4), got "
                        f"{len(points)} point{'s' * (len(points) != 1)} and no such axis")
    if engine is not None and out is None:
        out = Path("runs") / f"{experiment.stem}-{engine}-sweep"
    if out is not None:
        from mtpsim.fileio import refuse_other_command_outputs

        refuse_other_command_outputs(out, sweep=True)
    for folder, flag in ((out, "--out"), (plot, "--plot")):
        if folder is not None:
            output_dir(folder, flag)
    return axes, points, out


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


# Holds the stdout redirect from joining the Ray cluster until leaving it.
_RAY_STDOUT = contextlib.ExitStack()


@contextlib.contextmanager
def session(cluster: str | None) -> Iterator[Any]:
    """SIGTERM stops the sweep as Ctrl-C does; with `cluster`, the driver joins it (yielding its
    nodes, else None) and leaves at the end."""
    nodes = None
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        if cluster is not None:
            from mtpsim.cluster.connect import connect

            # From the moment the driver joins, Ray's listener may print (e.g. a node that died
            # before this run): to stderr, never into the table or --json (see _on_cluster).
            _RAY_STDOUT.enter_context(contextlib.redirect_stdout(sys.stderr))
            nodes = connect(cluster)
        yield nodes
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if nodes is not None:
            from mtpsim.cluster.connect import disconnect

            disconnect()
        _RAY_STDOUT.close()


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


def _pool(nodes: Any, workers: int = 1, retries: int = 0) -> Any:
    """The executor's pool: `workers` processes here, or the cluster's `nodes`."""
    from mtpsim.runs.executor import Pool

    return Pool(workers, None if nodes is None else tuple(nodes), retries)


def _require_simulation(nodes: Any) -> None:
    """Before a simulation's first task: a node holds a one-CPU batch, and simulates."""
    if nodes is not None:
        from mtpsim.cluster.connect import require_engine, require_room

        require_room(nodes, 0, 1, "a simulation batch", "--cluster", "CPU")
        require_engine(nodes, "simulate")


def uncertain(experiment: Path, points: list, n: int, jobs: int, nodes: Any, retries: int,
              out: Path | None) -> list[dict[str, Any]]:
    """`--uncertainty N` at every point (mtpsim.uncertainty.sweep): each point's draws on `jobs`
    local workers or on the cluster's `nodes`; with `out`, each point's draws kept there."""
    from mtpsim.uncertainty.sweep import run_grid

    _require_simulation(nodes)
    with _on_cluster(nodes):
        return run_grid(str(experiment), points, n, _pool(nodes, jobs, retries), out)


def simulated(experiment: Path, sets: list[str], axes: list, points: list, out: Path | None,
              jobs: int, nodes: Any, retries: int, bar: Bar, interrupted: Interrupted) -> SweepRun:
    """Every point simulated on `jobs` local workers or on the cluster's `nodes`; DIR/sweep.json
    written when `out` is given."""
    from mtpsim import sweep as sw

    _require_simulation(nodes)
    gen = sw.run_points(str(experiment), points, out, _pool(nodes, jobs, retries))
    records: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with _on_cluster(nodes):
        try:
            with bar(len(points)) as tick:
                for rec in gen:
                    records[rec["point_id"]] = rec
                    tick(len(records), "")
        except KeyboardInterrupt:
            done = len(list((out / "points").glob("*.json"))) if out else 0
            raise interrupted(done) from None
        finally:
            gen.close()
    wall = time.perf_counter() - t0
    ordered = [records[p.point_id] for p in points if p.point_id in records]
    rows = sw.rows(ordered, axes)
    keys = [a.key for a in axes]
    if out is not None:
        from mtpsim.fileio import atomic_write_json

        atomic_write_json(out / "sweep.json", {"experiment": str(experiment), "sets": sets,
                                               "axes": keys, "rows": sw.json_rows(rows, keys)})
    resumed = sum(1 for r in ordered if r.get("resumed"))
    # the workers that ran (the executor starts no more than the points it runs), not -j's
    return SweepRun(str(experiment), sets, keys, len(points), rows, wall, resumed, [],
                    sorted({n for r in ordered for n in r.get("notes", [])}), nodes,
                    min(jobs, max(1, len(points) - resumed)))


def real(experiment: Path, sets: list[str], axes: list, points: list, out: Path, nodes: Any,
         plan: Any, bar: Bar, interrupted: Interrupted) -> SweepRun:
    """Every point run for real under `plan` (mtpsim.real_sweep.RealPlan), on this machine or the
    cluster's `nodes`, into DIR/points; DIR/sweep.json written."""
    from mtpsim import real_sweep as rs
    from mtpsim.sweep import load_point

    if nodes is not None:
        from mtpsim.cluster.check import check_real

        check_real(str(experiment), points, plan, nodes)
    gen = rs.run_points(str(experiment), points, plan, out, _pool(nodes))
    counts = {"done": 0, "resumed": 0, "failed": 0}
    failed: list[str] = []
    t0 = time.perf_counter()
    with _on_cluster(nodes):
        try:
            with bar(len(points)) as tick:
                for ev in gen:
                    counts[ev.status] += 1
                    if ev.status == "failed":
                        failed.append(f"{', '.join(f'{k}={v}' for k, v in ev.point.values.items())}"
                                      f" ({ev.point.point_id}): {ev.reason}")
                    finished = sum(counts.values())
                    running = min(len(points) - finished, len(nodes) if nodes else 1)
                    tick(finished, f"running {running} · failed {counts['failed']}")
        except KeyboardInterrupt:
            raise interrupted(counts["done"] + counts["resumed"]) from None
        finally:
            gen.close()
    wall = time.perf_counter() - t0
    policies = list(dict.fromkeys(p for pt in points
                                  for p in load_point(str(experiment), pt.overrides).policies))
    rows = rs.rows(out, points, axes, policies, plan)
    run = SweepRun(str(experiment), sets, [a.key for a in axes], len(points), rows, wall,
                   counts["resumed"], failed, nodes=nodes, plan=plan)
    from mtpsim.fileio import atomic_write_json

    atomic_write_json(out / "sweep.json", real_summary(run))
    return run


def real_summary(run: SweepRun) -> dict[str, Any]:
    """A real sweep's DIR/sweep.json (its --json adds points, resumed and wall_s)."""
    return {"experiment": run.experiment, "sets": run.sets, "engine": run.plan.engine,
            "repeats": run.plan.repeats, "axes": run.keys, "rows": run.rows, "failed": run.failed}
