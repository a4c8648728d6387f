"""Submit tasks to Ray, yield their outcomes as they finish, cancel what is left on any exit.

Ray does the scheduling, the placement on nodes and the bounded retries (a task whose node dies,
or that raised, is rerun up to `max_retries` times); this module only gathers the outcomes and
turns a final failure into a reason the sweep records.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

CANCEL_GRACE_S = 30.0  # a cancelled task's `finally` blocks stop its server within this


@dataclass(frozen=True, slots=True)
class Outcome:
    key: Hashable
    value: Any = None
    error: str | None = None  # why the task failed after its retries


def failure_reason(e: BaseException) -> str:
    """One line: the task's own exception if it raised, else what Ray says went wrong."""
    from ray.exceptions import RayTaskError

    cause = e.cause if isinstance(e, RayTaskError) and e.cause is not None else e
    text = str(cause).strip()
    if isinstance(e, RayTaskError) and cause is e:  # no cause object: Ray's text ends in it
        text = text.splitlines()[-1] if text else ""
    first = text.splitlines()[0] if text else ""
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


def gather(submits: Sequence[tuple[Hashable, Callable[[], Any]]],
           on_submit: Callable[[int], None] | None = None) -> Iterator[Outcome]:
    """Call every submit (each returns an ObjectRef) and yield outcomes in completion order.
    Leaving the generator early (Ctrl-C, an error, `close()`) cancels the unfinished tasks."""
    import ray

    pending: dict[Any, Hashable] = {}
    try:
        for key, submit in submits:
            pending[submit()] = key
        if on_submit is not None:
            on_submit(len(pending))
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for ref in done:
                key = pending.pop(ref)
                try:
                    value = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - any task failure is recorded, not raised
                    yield Outcome(key, error=failure_reason(e))
                else:
                    yield Outcome(key, value=value)
    finally:
        if pending:
            cancel(list(pending))


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
