"""The driver's side of a sweep on Ray: submit the points, write what comes back under `--out`
(on this machine, atomically), record failures, skip what is already complete."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mtpsim.cluster.connect import Node, require_engine, require_room
from mtpsim.cluster.executor import gather
from mtpsim.errors import UserError
from mtpsim.fileio import atomic_write_json
from mtpsim.real_sweep import (
    PointEvent,
    RealPlan,
    finish_point,
    point_task,
    start_point,
    write_run,
)
from mtpsim.sweep import ExperimentRef, Point, finished_first, load_point, point_path, read_experiment

BATCHES_PER_CPU = 4  # simulation points go out in about this many tasks per cluster CPU


def simulate_batch(experiment: ExperimentRef, points: Sequence[Point]) -> list[dict[str, Any]]:
    """A Ray task's body: simulate a batch of points (one CPU)."""
    from mtpsim.sweep import run_point

    return [run_point(experiment, p, None) for p in points]


def batches(points: Sequence[Point], cpus: float) -> list[list[Point]]:
    size = max(1, math.ceil(len(points) / max(1.0, BATCHES_PER_CPU * cpus)))
    return [list(points[i:i + size]) for i in range(0, len(points), size)]


def simulate_on_ray(experiment: str, points: Sequence[Point], out: Path | None,
                    cluster: list[Node], retries: int, failed: list[str]) -> Iterator[dict[str, Any]]:
    """Like `sweep.run_points`, on the cluster: records in completion order, resumed ones
    first. A batch that fails after its retries adds its reason to `failed`."""
    import ray

    todo: list[Point] = []
    yield from finished_first(points, out, todo)
    if not todo:
        return
    ref = ray.put(read_experiment(experiment))
    task = ray.remote(simulate_batch).options(num_cpus=1, max_retries=retries)
    groups = batches(todo, sum(n.cpus for n in cluster))
    submits = [(i, functools.partial(task.remote, ref, g)) for i, g in enumerate(groups)]
    for o in gather(submits):
        if o.error is not None:
            failed.append(f"{len(groups[o.key])} points: {o.error}")
            continue
        for rec in o.value:
            if out is not None:
                atomic_write_json(point_path(out, _by_id(groups[o.key], rec["point_id"])), rec)
            yield rec


def _by_id(points: Sequence[Point], point_id: str) -> Point:
    return next(p for p in points if p.point_id == point_id)


def point_resources(exp: Any, plan: RealPlan) -> tuple[float, float, str]:
    """(GPUs, CPUs, the spec field that sets them) one point asks Ray for."""
    if plan.backend.caps.gpus:
        pp = exp.engine.pp
        if exp.vllm.distributed_executor_backend == "ray":
            return 0.0, 1.0, "vllm.distributed_executor_backend"  # vLLM places its own workers
        return float(exp.engine.dp * exp.engine.tp * pp), 1.0, "engine.tp"
    gpus = 1.0 if exp.reference.device == "cuda" else 0.0
    return gpus, float(max(1, exp.reference.threads)), "reference.threads"


def check_real(experiment: str, points: Sequence[Point], plan: RealPlan,
               cluster: list[Node]) -> None:
    """Before any work: every point fits some node, and the engine imports on the nodes."""
    for p in points:
        exp = load_point(experiment, p.overrides)
        gpus, cpus, field = point_resources(exp, plan)
        what = f"the point {_label(p)}"
        if plan.backend.caps.gpus and exp.vllm.distributed_executor_backend == "ray":
            total = sum(n.gpus for n in cluster)
            need = exp.engine.dp * exp.engine.tp * exp.engine.pp
            if total < need:
                raise UserError(exp.source, "engine.tp", f"expected at most {total:g} GPUs in all "
                                f"(the cluster's), {what} needs dp x tp x pp = {need}")
            continue
        require_room(cluster, gpus, cpus, what, exp.source, field)
    caps = plan.backend.caps
    require_engine(cluster, plan.engine, gpu_nodes_only=caps.gpus, modules=caps.node_modules)


def _label(p: Point) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.values.items()) or "(the experiment)"


def real_on_ray(experiment: str, points: Sequence[Point], plan: RealPlan,
                out: Path) -> Iterator[PointEvent]:
    """One Ray task per point (its repeats x policies, A B A B, on one node); Ray retries a
    task whose node died or that raised, `plan.retries` times."""
    import ray

    ref = ray.put(read_experiment(experiment))
    task = ray.remote(point_task)
    submits, by_id = [], {}
    for p in points:
        if not (todo := start_point(experiment, p, plan, out)):
            yield PointEvent(p, "resumed")
            continue
        gpus, cpus, _ = point_resources(load_point(experiment, p.overrides), plan)
        opts = task.options(num_cpus=cpus, num_gpus=gpus, max_retries=plan.retries,
                            retry_exceptions=True, name=f"mtpsim-point-{p.point_id}")
        submits.append((p.point_id, functools.partial(opts.remote, ref, p, plan, todo)))
        by_id[p.point_id] = p
    for o in gather(submits):
        p = by_id[o.key]
        reason = o.error or (o.value or {}).get("error")
        for run in (o.value or {}).get("runs", []):
            write_run(out, p, run)
        yield finish_point(out, p, reason)
