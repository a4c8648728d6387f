"""One executor for batches of independent jobs: sweep points, `--uncertainty` draws, advise
cells. `run_jobs(fn, items, shared, workers)` yields `(index, fn(shared, items[index]))`.

With one worker the jobs run in this process. With more, each worker is a child process that
gets `fn` and `shared` once when it starts (no module-level job state on either side) and the
items one at a time through a queue. Workers ignore Ctrl-C (it reaches the whole process group;
the parent handles it) and are terminated, then killed, on any exit of the generator: an
interrupt, an error, or a caller that stops early. A job's exception reaches the caller as
itself when it is a UserError (bad input: the command's one line, exit 2), else as a one-line
JobError naming the job; a worker that dies without a word is a JobError too, never a hang.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

from mtpsim.errors import JobError, UserError, one_line

S = TypeVar("S")
J = TypeVar("J")
R = TypeVar("R")

POLL_S = 0.05  # how often the parent checks that its workers are alive while it waits
STOP_GRACE_S = 2.0  # a terminated worker that has not ended by then is killed


def run_jobs(fn: Callable[[S, J], R], items: Sequence[J], shared: S, workers: int = 1, *,
             ordered: bool = True,
             progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, R]]:
    """Yield `(i, fn(shared, items[i]))` for every item: in item order if `ordered`, else as
    jobs finish. `progress(done, total)` is called after each job. `fn` must be a module-level
    function (a spawned worker imports it by name)."""
    workers = max(1, min(workers, len(items)))
    jobs = _in_process(fn, items, shared) if workers == 1 else _on_workers(fn, items, shared, workers)
    try:
        for done, (i, result) in enumerate(_in_order(jobs) if ordered else jobs, 1):
            if progress is not None:
                progress(done, len(items))
            yield i, result
    finally:
        jobs.close()  # stops the workers now, not when the generator is collected


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _in_order(jobs: Iterator[tuple[int, R]]) -> Iterator[tuple[int, R]]:
    waiting: dict[int, R] = {}
    nxt = 0
    for i, result in jobs:
        waiting[i] = result
        while nxt in waiting:
            yield nxt, waiting.pop(nxt)
            nxt += 1


def _in_process(fn: Callable[[S, J], R], items: Sequence[J],
                shared: S) -> Generator[tuple[int, R], None, None]:
    for i, item in enumerate(items):
        try:
            result = fn(shared, item)
        except UserError:
            raise
        except Exception as e:
            raise JobError(_failure(i, len(items), e)) from e
        yield i, result


def _failure(i: int, total: int, e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return one_line(f"job {i + 1} of {total} failed: {type(e).__name__}"
                    + (f": {text[0]}" if text else ""))


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


def _serve(fn: Callable[[S, J], R], shared: S, total: int, tasks: Any, results: Any) -> None:
    """A worker's loop: take (i, item) until None, answer (i, ok, result or error)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent ends us with terminate()
    _end_with_parent()
    while (task := tasks.get()) is not None:
        i, item = task
        try:
            answer = (i, True, fn(shared, item))
        except UserError as e:  # crosses the boundary as itself (UserError pickles its parts)
            answer = (i, False, e)
        except Exception as e:  # noqa: BLE001 - any other failure becomes one line for the parent
            answer = (i, False, JobError(_failure(i, total, e)))
        results.put(answer)


def _on_workers(fn: Callable[[S, J], R], items: Sequence[J], shared: S,
                workers: int) -> Generator[tuple[int, R], None, None]:
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    tasks.cancel_join_thread()  # on an early exit, unread tasks must not hold this process open
    for task in enumerate(items):
        tasks.put(task)
    for _ in range(workers):
        tasks.put(None)
    procs = [ctx.Process(target=_serve, args=(fn, shared, len(items), tasks, results), daemon=True)
             for _ in range(workers)]
    try:
        for p in procs:
            p.start()
        left = len(items)
        while left:
            try:
                i, ok, value = results.get(timeout=POLL_S)
            except queue.Empty:
                _check_alive(procs, results, left)
                continue
            if not ok:
                raise value
            left -= 1
            yield i, value
    finally:
        _stop(procs)
        results.close()
        tasks.close()


def _check_alive(procs: Sequence[Any], results: Any, left: int) -> None:
    """Raise if a worker died, or if every worker ended and answers are still missing (one
    that could not be sent back): waiting longer would wait for ever."""
    dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
    if dead:
        raise JobError(f"a worker process ended with exit code {dead[0]} before its jobs were done")
    if all(p.exitcode is not None for p in procs) and results.empty():
        raise JobError(f"the worker processes ended with {left} jobs unanswered")


def _stop(procs: Sequence[Any]) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(STOP_GRACE_S)
        if p.is_alive():
            p.kill()
            p.join()
