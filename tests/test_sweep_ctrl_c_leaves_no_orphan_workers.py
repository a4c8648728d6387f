"""Ctrl-C (SIGINT) or SIGTERM during a parallel sweep ends it with exit code 130, keeps the
finished points, and leaves no worker process behind."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

ROOT = Path(__file__).resolve().parents[1]


def children(pid: int) -> set[int]:
    out = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out |= {int(x) for x in (task / "children").read_text().split()}
        except OSError:
            pass
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_terminates_workers_and_keeps_finished_points(tmp_path, sig):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mtpsim", "sweep", str(ROOT / "experiments" / "pr47352.toml"),
           "--set", "speculative.num_speculative_tokens=1,2,3,4,5",
           "--set", "workload.max_concurrency=1,2,4,8,16,32", "-j", "2", "--out", str(out)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (len(workers) >= 2 and list(out.glob("points/*.json"))):
        workers |= children(proc.pid)
        time.sleep(0.05)
    assert len(workers) >= 2, "the pool never started"
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("interrupted: ")]
    assert " finished in " in line and "not kept:" in line
    assert line.split("resume: ", 1)[1].split()[:3] == ["mtpsim", "sweep", cmd[4]]
    assert line.endswith(f"--out {out} --set speculative.num_speculative_tokens=1,2,3,4,5 --set "
                         "workload.max_concurrency=1,2,4,8,16,32 -j 2")
    time.sleep(0.2)
    assert not [w for w in workers if alive(w)]
    assert list(out.glob("points/*.json"))
