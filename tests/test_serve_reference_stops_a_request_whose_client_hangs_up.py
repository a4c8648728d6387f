"""A client that hangs up stops its generation, streaming or not (vLLM's `with_cancellation`):
the engine goes idle within a second, and the server logs no traceback for it."""

from __future__ import annotations

import json
import logging
import socket
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from _served import live_tiny_server  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def _send(port: int, body: dict) -> socket.socket:
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(data) + data)
    return s


def _wait(cond, timeout_s: float) -> float | None:
    """Seconds until cond() held, or None if it never did within timeout_s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.01)
    return None


@pytest.mark.parametrize("stream", [False, True])
def test_the_engine_goes_idle_within_a_second_of_a_hang_up(stream, caplog):
    caplog.set_level(logging.WARNING)
    # 10 ms a step, 3000 tokens at <= 4 a step: more than 7 s of work if nobody stops it.
    with live_tiny_server(step_delay_s=0.01) as (port, loop):
        engine = loop.engine
        s = _send(port, {"prompt": "hello", "max_tokens": 3000, "ignore_eos": True,
                         "stream": stream})
        assert _wait(engine.has_unfinished, 10) is not None, "the request never started"
        if stream:
            assert s.recv(64).startswith(b"HTTP/1.1 200")  # tokens are flowing
        time.sleep(0.3)
        drafts_before = loop.counters().num_drafts
        s.close()
        idle_after = _wait(lambda: not engine.has_unfinished(), 1.0)
        assert idle_after is not None, "still generating a second after the client left"
        print(f"engine idle {idle_after:.3f} s after the hang-up (stream={stream}; "
              f"{drafts_before} drafts before it)")
        steps = loop.counters().num_drafts
        time.sleep(0.2)
        assert loop.counters().num_drafts == steps  # and it stays idle
        assert steps < 3000 // 4
        assert loop.alive
    noisy = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not noisy, [r.getMessage() for r in noisy]
