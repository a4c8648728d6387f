"""One executor for batches of independent jobs: sweep points (simulated or real), `--uncertainty`
draws, advise cells. `run_jobs(fn, items, shared, pool)` yields `(index, fn(shared, items[index]))`.

Where the jobs run is the `Pool`: worker processes on this machine (`workers`; one means this
process), or Ray tasks on the cluster the driver joined (`nodes`, mtpsim.runs.executor_ray). The
protocol (mtpsim.runs.jobs) is the same on both:
- `fn` is a module-level function; `shared` reaches each worker or node once.
- A `store` makes the batch resumable: items it already holds are yielded without running, and
  each new result is saved by the driver, on this machine, as it arrives.
- A job that raises is rerun `pool.retries` times (on Ray also when its node dies). Bad input (a
  UserError not `transient`) is never rerun and reaches the caller as itself (one line, exit 2);
  any other failure is one line naming the job, a JobError, or with `keep_going` a `Failed`
  yielded in the result's place. A worker that dies without a word is a JobError, never a hang.
- Leaving the generator early (Ctrl-C, an error, a caller that stops) ends every job: local
  workers are terminated, then killed; Ray tasks are interrupted, then force-cancelled.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

from mtpsim.errors import JobError
from mtpsim.runs.jobs import Failed, Placement, Pool, Store, as_pool, attempt, settle

__all__ = ["Failed", "Placement", "Pool", "Store", "as_pool", "default_workers", "run_jobs"]

S = TypeVar("S")
J = TypeVar("J")
R = TypeVar("R")

POLL_S = 0.05  # how often the parent checks that its workers are alive while it waits
STOP_GRACE_S = 2.0  # a terminated worker that has not ended by then is killed


def run_jobs(fn: Callable[[S, J], R], items: Sequence[J], shared: S, pool: int | Pool = 1, *,
             ordered: bool = True, progress: Callable[[int, int], None] | None = None,
             keep_going: bool = False, store: Store | None = None,
             placement: Callable[[J], Placement] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield `(i, fn(shared, items[i]))` for every item: in item order if `ordered`, else items
    from `store` first, then as jobs finish. `progress(done, total)` is called after each.
    `placement(item)` (Ray only): the item's own task and resources; without it, items go out
    in batches of one CPU each."""
    pool = as_pool(pool)
    stored: dict[int, Any] = {}
    todo: list[int] = []
    for i, item in enumerate(items):
        got = store.load(item) if store is not None else None
        if got is None:
            todo.append(i)
        else:
            stored[i] = got
    jobs = _start(fn, [items[i] for i in todo], shared, pool, keep_going, placement)

    def arrivals() -> Iterator[tuple[int, Any]]:
        yield from stored.items()
        for j, result in jobs:
            if store is not None and not isinstance(result, Failed):
                store.save(items[todo[j]], result)
            yield todo[j], result

    try:
        for done, (i, result) in enumerate(_in_order(arrivals()) if ordered else arrivals(), 1):
            if progress is not None:
                progress(done, len(items))
            yield i, result
    finally:
        jobs.close()  # stops the workers or tasks now, not when the generator is collected


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _start(fn: Callable[[S, J], R], items: Sequence[J], shared: S, pool: Pool, keep_going: bool,
           placement: Callable[[J], Placement] | None) -> Generator[tuple[int, Any], None, None]:
    if pool.on_ray:
        from mtpsim.runs.executor_ray import on_ray

        return on_ray(fn, items, shared, pool, keep_going, placement)
    if min(pool.workers, len(items)) <= 1:
        return _in_process(fn, items, shared, pool.retries, keep_going)
    return _on_workers(fn, items, shared, pool, keep_going)


def _in_order(jobs: Iterator[tuple[int, R]]) -> Iterator[tuple[int, R]]:
    waiting: dict[int, R] = {}
    nxt = 0
    for i, result in jobs:
        waiting[i] = result
        while nxt in waiting:
            yield nxt, waiting.pop(nxt)
            nxt += 1


def _in_process(fn: Callable[[S, J], R], items: Sequence[J], shared: S, retries: int,
                keep_going: bool) -> Generator[tuple[int, Any], None, None]:
    for i, item in enumerate(items):
        yield i, settle(i, len(items), *attempt(fn, shared, item, retries), keep_going)


def _end_with_parent() -> None:
    """Linux: SIGTERM this worker when the parent dies, even by SIGKILL (no `finally` runs
    then), instead of leaving it blocked on the task queue for ever. (The signal follows the
    thread that started the worker: run_jobs is called from a thread that outlives its jobs.)"""
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's `finally` is the only guard
        return
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)


def _serve(fn: Callable[[S, J], R], shared: S, retries: int, tasks: Any, results: Any) -> None:
    """A worker's loop: take (i, item) until None, answer (i, kind, value) as `attempt` does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent ends us with terminate()
    if hasattr(signal, "pthread_sigmask"):  # blocked by the parent across the fork (_started)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _START_SIGNALS)
    _end_with_parent()
    while (task := tasks.get()) is not None:
        i, item = task
        results.put((i, *attempt(fn, shared, item, retries)))


def _on_workers(fn: Callable[[S, J], R], items: Sequence[J], shared: S, pool: Pool,
                keep_going: bool) -> Generator[tuple[int, Any], None, None]:
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    tasks.cancel_join_thread()  # on an early exit, unread tasks must not hold this process open
    workers = min(pool.workers, len(items))
    for task in enumerate(items):
        tasks.put(task)
    for _ in range(workers):
        tasks.put(None)
    procs = [ctx.Process(target=_serve, args=(fn, shared, pool.retries, tasks, results), daemon=True)
             for _ in range(workers)]
    try:
        _started(procs)
        left = len(items)
        while left:
            try:
                i, kind, value = results.get(timeout=POLL_S)
            except queue.Empty:
                _check_alive(procs, results, left)
                continue
            left -= 1
            yield i, settle(i, len(items), kind, value, keep_going)
    finally:
        _stop(procs)
        results.close()
        tasks.close()


_START_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _started(procs: Sequence[Any]) -> None:
    """Start the workers with SIGINT and SIGTERM blocked across each fork: a forked child runs the
    parent's handlers until `_serve` sets its own, and a handler that raises (Ctrl-C's
    KeyboardInterrupt, or a sweep's SIGTERM-as-interrupt) between fork() and the child's first
    `try` sent the child back up the parent's stack, running the caller's code twice. Each child
    unblocks them once its own handlers are set; the parent gets anything pending at the end."""
    if not hasattr(signal, "pthread_sigmask"):
        for p in procs:
            p.start()
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _START_SIGNALS)
    try:
        for p in procs:
            p.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _check_alive(procs: Sequence[Any], results: Any, left: int) -> None:
    """Raise if a worker died, or if every worker ended and answers are still missing (one
    that could not be sent back): waiting longer would wait for ever."""
    dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
    if dead:
        raise JobError(f"a worker process ended with exit code {dead[0]} before its jobs were done")
    if all(p.exitcode is not None for p in procs) and results.empty():
        raise JobError(f"the worker processes ended with {left} jobs unanswered")


def _stop(procs: Sequence[Any]) -> None:
    """End the workers. An interrupt can land while `start()` is still inside for one of them:
    that one has no handle yet (pid None) and cannot be joined; its child, if forked, ends with
    this process (`_end_with_parent`)."""
    procs = [p for p in procs if p.pid is not None]
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(STOP_GRACE_S)
        if p.is_alive():
            p.kill()
            p.join()
