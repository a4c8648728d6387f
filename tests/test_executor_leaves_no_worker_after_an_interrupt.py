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
