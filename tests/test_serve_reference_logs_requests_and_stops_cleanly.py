"""`mtpsim serve-reference` as a user runs it: one start-up line with the URL, model, policy, k
and top-k; one access-log line per request with its status, tokens and draft acceptance;
Ctrl-C ends a request still generating (finish_reason "abort") and the server exits 0 with no
traceback; `--quiet` prints none of these lines."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("torch")

from mtpsim.vllm_runner.process import free_port  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

ROOT = Path(__file__).resolve().parents[1]
STARTUP = re.compile(r"^INFO \d\d-\d\d \d\d:\d\d:\d\d mtpsim reference server listening on "
                     r"http://127\.0\.0\.1:(\d+) \(model ref, policy fresh, k=2, top-k 16, cpu\)")


class Served:
    """The server as a subprocess whose output lines are read as they come."""

    def __init__(self, *flags: str) -> None:
        self.port = free_port()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mtpsim", "serve-reference", "--weights", "random-tiny",
             "--policy", "fresh", "--set", "speculative.num_speculative_tokens=2",
             "--set", "reference.threads=1", "--model-name", "ref", "--max-model-len", "16384",
             "--port", str(self.port), *flags],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            stdin=subprocess.DEVNULL, cwd=ROOT)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_line(self, timeout_s: float) -> str | None:
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            return None
        self.seen.append(line)
        return line

    def wait_healthy(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.seen
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("no /health")

    def post(self, body: dict) -> tuple[int, dict]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/v1/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def rest(self, timeout_s: float = 15) -> list[str]:
        self.proc.wait(timeout_s)
        while self.next_line(0.5) is not None:
            pass
        return self.seen

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def servers():
    started: list[Served] = []
    yield lambda *flags: started.append(Served(*flags)) or started[-1]
    for s in started:
        s.kill()


def test_startup_line_access_log_and_ctrl_c(servers):
    loud, quiet = servers(), servers("--quiet")  # start both at once: the start-up is slow
    first = loud.next_line(120)
    assert first is not None and (m := STARTUP.match(first)), loud.seen
    assert int(m.group(1)) == loud.port

    assert loud.post({"prompt": "hello", "max_tokens": 5, "ignore_eos": True})[0] == 200
    log = loud.next_line(10)
    assert re.search(r'127\.0\.0\.1:\d+ - "POST /v1/completions HTTP/1\.1" 200 OK - '
                     r"5 prompt \+ 5 completion tokens, acceptance \d+% \(\d+/\d+ draft tokens, "
                     r"mean length \d\.\d\d\), finish length$", log), log
    status, body = loud.post({"prompt": "hello", "n": 3})
    assert status == 400 and body["error"]["param"] == "n"
    assert loud.next_line(10).endswith('"POST /v1/completions HTTP/1.1" 400 Bad Request')

    answer: list[tuple[int, dict]] = []
    long = threading.Thread(target=lambda: answer.append(loud.post(
        {"prompt": "hello", "max_tokens": 16000, "ignore_eos": True})))
    long.start()
    time.sleep(1.0)  # generating (a few hundred tokens a second at most here)
    loud.proc.send_signal(signal.SIGINT)
    long.join(15)
    assert answer and answer[0][0] == 200
    choice = answer[0][1]["choices"][0]
    assert choice["finish_reason"] == "abort"
    assert answer[0][1]["usage"]["completion_tokens"] < 16000
    lines = loud.rest()
    assert loud.proc.returncode == 0, lines
    assert not any("Traceback" in x or "ERROR" in x for x in lines), lines
    assert any("finish abort" in x for x in lines) and lines[-1].endswith("server stopped")

    quiet.wait_healthy()
    assert quiet.post({"prompt": "hello", "max_tokens": 3})[0] == 200
    quiet.proc.send_signal(signal.SIGINT)
    assert quiet.rest() == [] and quiet.proc.returncode == 0
