"""`sweep --cluster HOST:PORT` where something accepts TCP but is no Ray head: ray.init would
retry for many minutes. A port that gives no gRPC answer is refused at once; a join that starts
but never finishes is abandoned after MTPSIM_RAY_INIT_TIMEOUT_S. Either way the sweep ends with
one line naming --cluster, the address and what was expected, exit code 2."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _sweep_experiment import write_small

pytest.importorskip("ray")

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)
ROOT = Path(__file__).resolve().parents[1]
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty HTTP/2 SETTINGS frame


def _listener(greeting: bytes) -> tuple[socket.socket, int]:
    """A loopback port that accepts connections, sends `greeting`, then never says a word."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn = srv.accept()[0]
                conn.sendall(greeting)
                held.append(conn)
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return srv, srv.getsockname()[1]


def _sweep(tmp_path: Path, greeting: bytes, timeout: str) -> tuple[subprocess.CompletedProcess, str, float]:
    srv, port = _listener(greeting)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MTPSIM_RAY_INIT_TIMEOUT_S": timeout,
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "COLUMNS": "300"}
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "mtpsim", "sweep", str(write_small(tmp_path)),
                               "--set", "workload.input_len=100,200", "--cluster", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, env=env, timeout=240)
    finally:
        srv.close()
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    return proc, f"127.0.0.1:{port}", time.monotonic() - t0


def test_a_port_that_gives_no_grpc_answer_is_refused_in_one_line(tmp_path):
    proc, address, _ = _sweep(tmp_path, b"", "60")
    assert proc.stderr.strip() == (f"error: --cluster: {address}: expected a Ray head's GCS port "
                                   "(HOST:PORT, e.g. 6379) or Ray Client port (ray://HOST:10001): "
                                   "it accepts connections but gave no gRPC answer in 10 s")


def test_a_join_that_never_finishes_is_abandoned_after_the_bound(tmp_path):
    proc, address, wall = _sweep(tmp_path, SETTINGS, "4")  # speaks HTTP/2, then nothing
    last = proc.stderr.strip().splitlines()[-1]  # Ray's own retry notices may come first
    assert last.startswith(f"error: --cluster: {address}: expected a Ray cluster that lets this "
                           "driver join within 4 s"), proc.stderr
    assert "MTPSIM_RAY_INIT_TIMEOUT_S" in last
    assert wall < 90  # importing ray, 4 s of waiting and leaving; unbounded it took minutes


def test_a_bad_bound_is_refused(tmp_path):
    proc, _, _ = _sweep(tmp_path, SETTINGS, "soon")
    assert proc.stderr.strip() == ("error: MTPSIM_RAY_INIT_TIMEOUT_S: expected a number of "
                                   "seconds > 0, got 'soon'")
