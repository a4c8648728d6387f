"""The executor's Ray backend (mtpsim.runs.executor): the same jobs (mtpsim.runs.jobs) as Ray tasks
on the cluster the driver joined. Ray is imported here only, lazily: it is the optional `ray` extra.

Ray does the scheduling, the placement on nodes and the rerun of a task whose node died
(`pool.retries` times); a job that raises is rerun inside its task as on a local worker
(`attempt`), so its answer and its one-line failure read the same on either backend. Jobs without
a placement go out in batches (about `BATCHES_PER_CPU` tasks per cluster CPU, one CPU each), so
Ray's per-task cost stays small next to a simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from typing import Any

from mtpsim.runs.jobs import Placement, Pool, attempt, settle

BATCHES_PER_CPU = 4
CANCEL_GRACE_S = 30.0  # a cancelled task's `finally` blocks stop its servers within this


def _task(fn: Callable[[Any, Any], Any], shared: Any, items: Sequence[Any],
          retries: int) -> list[tuple[str, Any]]:
    """A Ray task's body: each item's answer as `attempt` gives it."""
    return [attempt(fn, shared, item, retries) for item in items]


def on_ray(fn: Callable[[Any, Any], Any], items: Sequence[Any], shared: Any, pool: Pool,
           keep_going: bool,
           placement: Callable[[Any], Placement] | None) -> Generator[tuple[int, Any], None, None]:
    """Submit every item, yield `(i, answer)` in completion order; cancel what is left on exit."""
    import ray

    total = len(items)
    if not total:
        return
    ref = ray.put(shared)
    task = ray.remote(_task)
    pending: dict[Any, list[int]] = {}
    try:
        if placement is None:
            size = max(1, math.ceil(total / (BATCHES_PER_CPU * pool.size)))
            for start in range(0, total, size):
                group = list(range(start, min(start + size, total)))
                opts = task.options(num_cpus=1, max_retries=pool.retries, name="mtpsim-jobs")
                pending[opts.remote(fn, ref, [items[i] for i in group], pool.retries)] = group
        else:
            for i, item in enumerate(items):
                pl = placement(item)
                opts = task.options(num_cpus=pl.cpus, num_gpus=pl.gpus, max_retries=pool.retries,
                                    name=pl.name or "mtpsim-job")
                pending[opts.remote(fn, ref, [item], pool.retries)] = [i]
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for r in done:
                group = pending.pop(r)
                try:
                    answers = ray.get(r)
                except Exception as e:  # noqa: BLE001 - its node died past the retries, or Ray failed
                    answers = [("failed", failure_reason(e))] * len(group)
                for i, (kind, value) in zip(group, answers, strict=True):
                    yield i, settle(i, total, kind, value, keep_going)
    finally:
        if pending:
            cancel(list(pending))


def failure_reason(e: BaseException) -> str:
    """One line: the task's own exception if it raised, else what Ray says went wrong."""
    from ray.exceptions import RayTaskError

    cause = e.cause if isinstance(e, RayTaskError) and e.cause is not None else e
    text = str(cause).strip()
    if isinstance(e, RayTaskError) and cause is e:  # no cause object: Ray's text ends in it
        text = text.splitlines()[-1] if text else ""
    first = text.splitlines()[0] if text else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


def cancel(refs: list[Any], grace_s: float = CANCEL_GRACE_S) -> None:
    """Interrupt running tasks (KeyboardInterrupt in the task, so its servers are stopped), wait
    for them, then kill what is left."""
    import ray

    for ref in refs:
        try:
            ray.cancel(ref, force=False)
        except Exception:  # noqa: BLE001, S110 - already finished or its node is gone
            pass
    try:
        _, left = ray.wait(refs, num_returns=len(refs), timeout=grace_s)
    except Exception:  # noqa: BLE001 - the cluster went away: nothing left to wait for
        return
    for ref in left:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001, S110
            pass
