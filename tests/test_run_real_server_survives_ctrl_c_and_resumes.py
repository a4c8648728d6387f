"""`mtpsim run-real --engine reference --server`: Ctrl-C mid-policy stops the server and keeps
the finished policy's result; the rerun skips that policy and runs the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _served import server_pids

pytest.importorskip("fastapi")
pytest.importorskip("aiohttp")

from mtpsim.vllm_runner.process import free_port  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

TOML = """
seed = 1
policies = ["fresh", "share"]
[speculative]
num_speculative_tokens = 3
index_topk = 16
[engine]
max_num_seqs = 4
[workload]
num_prompts = {n}
input_len = 48
output_len = {out}
max_concurrency = 4
[reference]
weights = "random-tiny"
threads = 1
device = "cpu"
[vllm]
port = {port}
stop_timeout_s = 5.0
"""


def _run_real(exp: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mtpsim", "run-real", str(exp), "--server",
                             "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _wait_for(cond, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_sigint_stops_the_server_and_a_rerun_resumes(tmp_path):
    port = free_port()
    exp = tmp_path / "exp.toml"
    exp.write_text(TOML.format(n=12, out=400, port=port))
    out = tmp_path / "out"
    proc = _run_real(exp, out)
    try:
        _wait_for(lambda: (out / "fresh.json").is_file(), 120)
        _wait_for(lambda: (out / "share.server.log").is_file() and server_pids(port), 60)
        time.sleep(2.0)  # share's server is up and serving
        assert not (out / "share.json").exists()
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert server_pids(port) == []
    assert not (out / "share.json").exists()
    fresh_mtime = os.stat(out / "fresh.json").st_mtime_ns

    rerun = _run_real(exp, out)  # the same settings: only those may resume
    text, _ = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, text
    assert "fresh: kept" in text
    assert os.stat(out / "fresh.json").st_mtime_ns == fresh_mtime
    share = json.loads((out / "share.json").read_text())
    assert share["policy"] == "share" and share["completed"] == 12
    assert server_pids(port) == []
