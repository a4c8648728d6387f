"""If the engine thread dies, open streams end with an error, every later request is refused
at once (503) instead of waiting on a dead thread, /health says so, and the server is told
to exit (the runner then reports the server log)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient  # noqa: E402

from mtpsim.serve_reference.app import create_app  # noqa: E402
from mtpsim.serve_reference.loop import EngineLoop  # noqa: E402
from mtpsim.serve_reference.server import TINY_RANDOM, ServerOptions, build_engine  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def test_a_dead_engine_refuses_requests_and_asks_the_server_to_exit(monkeypatch):
    engine = build_engine(ServerOptions(policy="share", port=0, weights=TINY_RANDOM,
                                        max_num_seqs=2, max_model_len=64))

    def broken_step():
        raise RuntimeError("kernel exploded")

    monkeypatch.setattr(engine, "step", broken_step)
    failures = []
    loop = EngineLoop(engine, on_error=failures.append)
    loop.start()
    try:
        with TestClient(create_app(loop, "ref", 64)) as c:
            body = {"prompt": "abc", "max_tokens": 4, "stream": True}
            with pytest.raises(RuntimeError, match="kernel exploded"):
                with c.stream("POST", "/v1/completions", json=body) as r:
                    list(r.iter_lines())
            assert [str(e) for e in failures] == ["kernel exploded"]
            later = c.post("/v1/completions", json={"prompt": "abc", "max_tokens": 4})
            assert later.status_code == 503 and "engine has stopped" in later.json()["error"]["message"]
            assert c.get("/health").status_code == 503
    finally:
        loop.stop()
