"""The reference server's limits and lifecycle: a --max-model-len beyond the weights' RoPE table,
a --max-num-seqs whose KV cache cannot fit, a top-k wider than a request, and a real run whose
arrivals span more than a day are one line, exit 2, before any engine is built; request bodies
past 4 MiB are a 413 in vLLM's format; SIGTERM prints the "stopped" line; and a server whose
launcher is SIGKILLed during start-up exits (the parent watch starts first)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("torch")

from fastapi import FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from mtpsim.cli import app  # noqa: E402
from mtpsim.serve_reference.body_limit import MAX_BODY_BYTES, BodyLimit  # noqa: E402
from mtpsim.vllm_runner.process import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                                   if p)}


def _refused(args: list[str], flag: str) -> None:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"error: {flag}") or f": {flag}: " in r.output, r.output
    assert r.output.count("\n") == 1


@settings(max_examples=10, deadline=None, database=None)
@given(extra=st.integers(0, 10**6))
def test_a_max_model_len_past_the_rope_table_is_refused(extra):
    # the shipped base weights hold 8,192 positions; k = 3 drafts need 4 more
    _refused(["serve-reference", "--max-model-len", str(8189 + extra)], "--max-model-len")


@settings(max_examples=10, deadline=None, database=None)
@given(seqs=st.integers(4097, 10**9))
def test_a_batch_beyond_the_cap_or_memory_is_refused(seqs):
    _refused(["serve-reference", "--max-num-seqs", str(seqs)], "--max-num-seqs")
    _refused(["serve-reference", "--max-num-seqs", "4000", "--max-model-len", "8000"],
             "--max-num-seqs")


@settings(max_examples=10, deadline=None, database=None)
@given(topk=st.integers(4097, 10**9))
def test_a_top_k_wider_than_a_request_is_refused(topk):
    _refused(["serve-reference", "--set", f"speculative.index_topk={topk}"], "speculative.index_topk")


@settings(max_examples=10, deadline=None, database=None)
@given(rate=st.floats(1e-300, 32 / 86_400.5))
def test_a_real_run_whose_arrivals_span_more_than_a_day_is_refused(tmp_path_factory, rate):
    out = tmp_path_factory.mktemp("rr")
    r = CliRunner().invoke(app, ["run-real", str(ROOT / "experiments" / "reference-cpu.toml"),
                                 "--set", f"workload.request_rate={rate!r}", "--out", str(out)])
    assert r.exit_code == 2 and "workload.request_rate" in r.output, r.output
    r = CliRunner().invoke(app, ["sweep", str(ROOT / "experiments" / "reference-cpu.toml"), "--engine",
                                 "reference", "--set", f"workload.request_rate=1,{rate!r}", "--out",
                                 str(out / "sweep")])
    assert r.exit_code == 2 and "workload.request_rate" in r.output, r.output


def _echo_app() -> FastAPI:
    a = FastAPI()
    a.add_middleware(BodyLimit)

    @a.post("/echo")
    async def echo(body: dict) -> dict:
        return {"n": len(body.get("x", ""))}

    return a


def test_bodies_past_the_cap_are_a_413_in_vllms_format_whatever_the_framing():
    client = TestClient(_echo_app())
    assert client.post("/echo", json={"x": "a" * 1000}).json() == {"n": 1000}
    big = b'{"x": "' + b"a" * (MAX_BODY_BYTES + 10) + b'"}'
    r = client.post("/echo", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == 413

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"x": "'
        for _ in range(MAX_BODY_BYTES // 65536 + 2):
            yield b"a" * 65536
        yield b'"}'

    r = client.post("/echo", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


def _server(*flags: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "mtpsim", "serve-reference", "--weights",
                          "random-tiny", "--set", "reference.threads=1", "--port", str(port), *flags],
                         env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         stdin=subprocess.DEVNULL, cwd=ROOT)
    return p, port


@pytest.mark.slow
def test_sigterm_prints_the_stopped_line_and_exits_0():
    p, _ = _server()
    try:
        for line in p.stdout:
            if "listening on" in line:
                break
        p.send_signal(signal.SIGTERM)
        rest = p.stdout.read()
        assert p.wait(60) == 0, rest
        assert rest.rstrip().endswith("mtpsim reference server stopped"), rest
        assert "Traceback" not in rest
    finally:
        p.kill()


@pytest.mark.slow
def test_a_launcher_killed_during_start_up_leaves_no_server():
    code = (
        "import os, subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-m', 'mtpsim', 'serve-reference', '--weights', "
        f"'random-tiny', '--exit-with-parent', '--port', '{free_port()}', '--quiet'], cwd={str(ROOT)!r}, "
        "env={**os.environ, 'MTPSIM_PARENT_PID': str(os.getpid())}, stdin=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
        "os.kill(os.getpid(), 9)\n")  # killed at once: inside the server's start-up window
    launcher = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                              timeout=60)
    pid = int(re.findall(r"\d+", launcher.stdout)[0])
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # reap it if it became our zombie (it never is our child here; kept for safety)
        time.sleep(0.5)
    os.kill(pid, signal.SIGKILL)
    pytest.fail("the reference server outlived its SIGKILLed launcher")
