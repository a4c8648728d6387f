"""Real sweeps: every grid point run for real, `repeats` times per policy, resumable.

Layout under `--out` (written on the driver's machine only, each file atomically):
`points/<id>/point.json` (the point), `points/<id>/r<R>/<policy>.json` and `.trace.jsonl`
(repeat R of a policy; the result is written last, so a result on disk means a finished run),
`points/<id>/failed.json` (why the point failed after its retries; removed when it succeeds).

Repeat R runs with seed `seed + R` (prompts and sampling differ between repeats, so pooled
requests are independent samples), the same seed for every policy of a repeat (common random
numbers). The runs of one point go A B A B ... (policies interleaved across repeats) in one
process on one node, so a slow node cannot read as a policy effect; each result names its node.
"""

from __future__ import annotations

import math
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import ResultError, UserError
from mtpsim.fileio import atomic_write_json, atomic_write_text
from mtpsim.real.backend import Backend, backend
from mtpsim.sweep import ROW_METRICS, Axis, ExperimentRef, Point, load_point, read_experiment

if TYPE_CHECKING:
    from mtpsim.runs.executor import Pool

FORMAT = "mtpsim-real-sweep-point"
VERSION = 1


@dataclass(frozen=True, slots=True)
class RealPlan:
    engine: str  # an engine of mtpsim.real.ENGINES
    repeats: int = 1
    server: bool = False  # reference: behind `mtpsim serve-reference`, as vLLM runs
    retries: int = 2  # reruns of a point whose node died or whose server failed

    @property
    def backend(self) -> Backend:
        return backend(self.engine, self.server)

    @property
    def mode(self) -> str:
        return self.backend.caps.mode


def point_dir(out: Path, point: Point) -> Path:
    return out / "points" / point.point_id


def run_paths(out: Path, point: Point, repeat: int, policy: str) -> tuple[Path, Path]:
    d = point_dir(out, point) / f"r{repeat}"
    return d / f"{policy}.json", d / f"{policy}.trace.jsonl"


def repeat_overrides(point: Point, seed: int, repeat: int) -> list[str]:
    return [*point.overrides, f"seed={seed + repeat}"]


def complete_repeats(out: Path, point: Point, policies: Sequence[str], plan: RealPlan) -> set[int]:
    """Repeats whose every policy has a result of the plan's mode. A file there that does not
    read as a result, or holds another engine's, is one line: rerunning the repeat would
    replace it (the sweep writes each result whole, so it is damage or something else's); so is
    a result without its trace (written before it, so moved or deleted)."""
    import os

    from mtpsim.result import load_result

    done = set()
    for r in range(plan.repeats):
        ok = True
        for policy in policies:  # every file is checked, not only up to the first missing one
            path = run_paths(out, point, r, policy)[0]
            if not os.path.lexists(path):
                ok = False
                continue
            try:
                mode = load_result(path).mode
            except ResultError as e:
                raise UserError(path, e.field, f"{e.expected}: {DAMAGED}") from None
            if mode != plan.mode:
                raise UserError(path, "mode", f"expected a {plan.mode} result of this sweep, got a "
                                f"{mode} one: {DAMAGED}")
            if not (trace := run_paths(out, point, r, policy)[1]).is_file():
                raise UserError(path, None, f"expected its trace {trace.name} beside it (the sweep "
                                "writes each trace before its result, so it was moved or deleted): "
                                "put it back, or move this result aside (the sweep then reruns "
                                "it), or choose another --out")
        if ok:
            done.add(r)
    return done


DAMAGED = ("not a finished result to resume (the sweep writes each whole, so this one was cut "
           "short or written by something else): move it aside to keep it (the sweep then reruns "
           "it), or choose another --out")


def write_point(out: Path, point: Point, experiment: str, plan: RealPlan) -> None:
    atomic_write_json(point_dir(out, point) / "point.json", {
        "format": FORMAT, "version": VERSION, "point_id": point.point_id, "experiment": experiment,
        "overrides": list(point.overrides), "values": point.values, "notes": list(point.notes),
        "plan": asdict(plan)})


def write_run(out: Path, point: Point, run: dict[str, Any]) -> None:
    """One finished (repeat, policy) shipped back from a node: trace first, result last."""
    res_path, trace_path = run_paths(out, point, run["repeat"], run["policy"])
    atomic_write_text(trace_path, run["trace"])
    atomic_write_json(res_path, run["result"])


def write_failed(out: Path, point: Point, reason: str) -> None:
    atomic_write_json(point_dir(out, point) / "failed.json",
                      {"point_id": point.point_id, "values": point.values, "reason": reason})


def clear_failed(out: Path, point: Point) -> None:
    (point_dir(out, point) / "failed.json").unlink(missing_ok=True)


def finish_point(out: Path, point: Point, reason: str) -> PointEvent:
    """Record a point's outcome (failed.json with the reason, or none) and say it."""
    if reason:
        write_failed(out, point, reason)
        return PointEvent(point, "failed", reason)
    clear_failed(out, point)
    return PointEvent(point, "done")


def this_node() -> dict[str, str]:
    node = {"hostname": socket.gethostname()}
    try:
        import ray

        if ray.is_initialized():
            ctx = ray.get_runtime_context()
            node["ray_node_id"] = ctx.get_node_id()
            node["ip"] = ray.util.get_node_ip_address()
    except ImportError:
        pass
    return node


def run_repeats(experiment: ExperimentRef, point: Point, plan: RealPlan, repeats: Sequence[int],
                sink: Callable[[dict[str, Any]], None]) -> None:
    """Run the given repeats of one point, A B A B ..., handing each finished run to `sink`
    as {"repeat", "policy", "result" (JSON), "trace" (JSONL text)}. Servers run here, on
    127.0.0.1, with their logs in a temporary folder."""
    node = this_node()
    work = Path(tempfile.mkdtemp(prefix="mtpsim-point-"))
    try:
        base = load_point(experiment, point.overrides)
        runner = plan.backend.runner(work)
        for r in repeats:
            exp = load_point(experiment, repeat_overrides(point, base.seed, r))
            for policy in exp.policies:
                # the sweep's own bar shows progress: a served run's bench client draws none
                result, trace = runner(exp, policy, _no_progress)
                result.extra.node, result.extra.repeat = node, r
                result.extra.point_id = point.point_id
                trace_path = work / f"r{r}-{policy}.trace.jsonl"
                trace.write(trace_path)
                sink({"repeat": r, "policy": policy, "result": result.to_json(),
                      "trace": trace_path.read_text(encoding="utf-8")})
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _no_progress(done: int, total: int) -> None:
    return None


def _node_name(node: dict[str, Any]) -> str:
    return str(node.get("ip") or node.get("hostname") or "?")


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def rows(out: Path, points: Sequence[Point], axes: Sequence[Axis], policies: Sequence[str],
         plan: RealPlan) -> list[dict[str, Any]]:
    """One row per (point, policy): metrics averaged over the finished repeats, their number,
    the spread of output throughput between repeats, and the nodes that ran them."""
    from mtpsim.result import load_result

    table = []
    for p in points:
        for policy in policies:
            results = []
            for r in range(plan.repeats):
                path = run_paths(out, p, r, policy)[0]
                if path.is_file():
                    results.append(load_result(path))
            row: dict[str, Any] = {a.key: p.values[a.key] for a in axes}
            row["policy"] = policy
            for k in ROW_METRICS:
                vals = [float(x.get(k)) for x in results if isinstance(x.get(k), int | float)]
                if vals:
                    row[k] = _mean(vals)
            tput = [float(x.get("output_throughput")) for x in results]
            if len(tput) > 1:
                m = _mean(tput)
                row["output_throughput_sd"] = math.sqrt(sum((t - m) ** 2 for t in tput) / (len(tput) - 1))
            row["repeats"] = len(results)
            row["nodes"] = sorted({_node_name(x.extra.node or {}) for x in results})
            row["point_id"] = p.point_id
            table.append(row)
    return table


@dataclass(frozen=True, slots=True)
class PointEvent:
    point: Point
    status: str  # "resumed" (complete on disk), "done" or "failed"
    reason: str = ""


def todo_repeats(experiment: ExperimentRef, point: Point, plan: RealPlan, out: Path) -> list[int]:
    policies = load_point(experiment, point.overrides).policies
    done = complete_repeats(out, point, policies, plan)
    return [r for r in range(plan.repeats) if r not in done]


def start_point(experiment: str, point: Point, plan: RealPlan, out: Path) -> list[int]:
    """The repeats a point still needs; when there are any, its point file is written first."""
    todo = todo_repeats(experiment, point, plan, out)
    if todo:
        write_point(out, point, experiment, plan)
    return todo


def point_resources(exp: Any, plan: RealPlan) -> tuple[float, float, str]:
    """(GPUs, CPUs, the spec field that sets them) one point asks a Ray node for."""
    if plan.backend.caps.gpus:
        if exp.vllm.distributed_executor_backend == "ray":
            return 0.0, 1.0, "vllm.distributed_executor_backend"  # vLLM places its own workers
        return float(exp.engine.dp * exp.engine.tp * exp.engine.pp), 1.0, "engine.tp"
    gpus = 1.0 if exp.reference.device == "cuda" else 0.0
    return gpus, float(max(1, exp.reference.threads)), "reference.threads"


Job = tuple[Point, tuple[int, ...]]  # a point and the repeats it still needs


def point_job(shared: tuple[ExperimentRef, RealPlan, Path | None], job: Job) -> list[dict[str, Any]]:
    """The executor's job for one point: its repeats, A B A B, on one node. With `out` (the
    driver's files are here) each run is written as it finishes and a rerun redoes only the
    repeats still missing; without (a Ray node), the runs go back to the driver."""
    experiment, plan, out = shared
    point, repeats = job
    if out is None:
        runs: list[dict[str, Any]] = []
        run_repeats(experiment, point, plan, repeats, runs.append)
        return runs
    todo = todo_repeats(experiment, point, plan, out)
    run_repeats(experiment, point, plan, todo, lambda run: write_run(out, point, run))
    return []


def run_points(experiment: str, points: Sequence[Point], plan: RealPlan, out: Path,
               pool: Pool) -> Iterator[PointEvent]:
    """The real sweep on the executor's `pool` (mtpsim.runs.executor.Pool: this process, or one
    Ray task per point asking for its resources); a point whose run raised is rerun
    `plan.retries` times (on Ray also when its node died), then recorded as failed."""
    from mtpsim.runs.executor import Failed, Placement, run_jobs

    todo: list[Job] = []
    for p in points:
        if repeats := start_point(experiment, p, plan, out):
            todo.append((p, tuple(repeats)))
        else:
            yield PointEvent(p, "resumed")

    def placement(job: Job) -> Placement:
        gpus, cpus, _ = point_resources(load_point(experiment, job[0].overrides), plan)
        return Placement(cpus, gpus, f"mtpsim-point-{job[0].point_id}")

    ship = (experiment, plan, out) if pool.shares_files else (read_experiment(experiment), plan, None)
    for i, got in run_jobs(point_job, todo, ship, replace(pool, retries=plan.retries), ordered=False,
                           keep_going=True, placement=placement if pool.on_ray else None):
        point = todo[i][0]
        if isinstance(got, Failed):
            yield finish_point(out, point, got.reason)
            continue
        for run in got:
            write_run(out, point, run)
        yield finish_point(out, point, "")
