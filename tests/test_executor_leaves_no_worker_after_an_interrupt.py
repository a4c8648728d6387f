"""SIGINT or SIGTERM while the executor's workers are busy, or the parent killed outright: no
worker process outlives the parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from mtpsim.runs.executor import run_jobs

    def slow(_, x):
        os.write(1, b"%d\\n" % os.getpid())  # one write: two workers' lines never interleave
        time.sleep(60)

    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        for _ in run_jobs(slow, list(range(8)), None, 2):
            pass
    except KeyboardInterrupt:
        sys.exit(130)
""")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            start_new_session=True)
    workers = [int(proc.stdout.readline()) for _ in range(2)]
    return proc, workers


def _gone(workers: list[int], within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(_alive(w) for w in workers):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_ends_every_worker(tmp_path, sig):
    proc, workers = _start(tmp_path)
    os.killpg(proc.pid, sig) if sig == signal.SIGINT else os.kill(proc.pid, sig)  # Ctrl-C: the group
    assert proc.wait(timeout=20) == 130
    assert _gone(workers)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_end_when_the_parent_is_killed(tmp_path):
    proc, workers = _start(tmp_path)
    proc.kill()  # no `finally` runs in the parent
    proc.wait(timeout=20)
    assert _gone(workers)


def test_stopping_skips_a_worker_whose_start_was_interrupted():
    """Ctrl-C can land inside Process.start() (seen in CI): the executor's clean-up must not fail
    on that unstarted handle, or the interrupt surfaces as an AssertionError, not exit 130."""
    import multiprocessing

    from mtpsim.runs.executor import _stop

    ctx = multiprocessing.get_context("fork")
    started = ctx.Process(target=time.sleep, args=(30,), daemon=True)
    started.start()
    _stop([started, ctx.Process(target=time.sleep, args=(30,))])
    assert not started.is_alive()


def _mask(_: None, x: int) -> list[int]:
    return sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_workers_start_with_interrupts_blocked_and_unblock_them_in_their_own_loop():
    """A forked worker runs the parent's signal handlers until it sets its own: Ctrl-C (or a
    sweep's SIGTERM-as-interrupt) landing in that window raised in the child and sent it back up
    the parent's stack, running the caller's code twice (a test once reported twice, FAILED then
    PASSED, by one pytest-xdist worker). SIGINT and SIGTERM are blocked across each fork, each
    worker unblocks them in its loop, and the parent's mask is as it was."""
    from mtpsim.runs.executor import run_jobs

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    masks = [m for _, m in run_jobs(_mask, [0, 1, 2, 3], None, 2)]
    assert all(signal.SIGINT not in m and signal.SIGTERM not in m for m in masks)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")
def test_each_fork_happens_with_interrupts_blocked():
    from mtpsim.runs.executor import _started

    seen = []

    class Fake:
        def start(self) -> None:
            seen.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    _started([Fake(), Fake()])
    assert len(seen) == 2 and all({signal.SIGINT, signal.SIGTERM} <= m for m in seen)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
