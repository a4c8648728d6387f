"""ServerProcess owns a whole process group: a server that never answers /health times out
with its log tail, one that ignores SIGTERM is killed after the grace period, children it
started go with it, and a runner ended by SIGTERM still stops it."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mtpsim.vllm_runner.process import ServerError, ServerProcess, free_port, group_members

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

# A "server" that starts a child, logs, ignores SIGTERM if asked, and never serves HTTP.
STUBBORN = textwrap.dedent("""
    import signal, subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if sys.argv[1] == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("loading weights... still loading", flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("mode", ["obey-term", "ignore-term"])
def test_a_server_that_never_answers_times_out_and_its_group_is_killed(tmp_path, mode):
    server = ServerProcess([sys.executable, "-c", STUBBORN, mode], {}, tmp_path / "s.log",
                           free_port(), grace_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(ServerError) as e, server:
        time.sleep(0.5)
        assert len(group_members(server.pgid)) == 2  # the server and its child
        server.wait_healthy(timeout_s=1.0)
    assert "/health did not answer within 1 s" in str(e.value)
    assert "still loading" in str(e.value)
    assert group_members(server.pgid) == []
    assert time.monotonic() - t0 < 10


def test_a_runner_ended_by_sigterm_stops_its_server(tmp_path):
    pid_file = tmp_path / "pgid"
    runner = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from mtpsim.vllm_runner.process import ServerProcess
        from mtpsim.vllm_runner.runner import sigterm_as_exit
        with sigterm_as_exit(), ServerProcess([sys.executable, "-c", {STUBBORN!r}, "obey-term"],
                                              {{}}, Path({str(tmp_path / "s.log")!r}), 1,
                                              grace_s=2.0) as s:
            Path({str(pid_file)!r}).write_text(str(s.pgid))
            time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", runner])
    deadline = time.monotonic() + 60
    while not pid_file.is_file() or not pid_file.read_text():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    pgid = int(pid_file.read_text())
    time.sleep(0.5)
    assert group_members(pgid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM
    assert group_members(pgid) == []
