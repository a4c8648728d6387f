"""Helpers for tests that launch `mtpsim serve-reference` through the runner."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mtpsim.spec import experiment_from_dict
from mtpsim.vllm_runner.process import free_port


def tiny_experiment(port: int | None = None, **workload) -> object:
    """A tiny random-init reference model behind the server; a few short requests."""
    w = {"num_prompts": 8, "input_len": 48, "output_len": 32, "max_concurrency": 4,
         "temperature": 1.0, "ignore_eos": True, **workload}
    return experiment_from_dict({
        "seed": 1, "policies": ["fresh", "share"],
        "speculative": {"num_speculative_tokens": 3, "index_topk": 16},
        "engine": {"max_num_seqs": 4}, "workload": w,
        "reference": {"weights": "random-tiny", "threads": 1, "device": "cpu"},
        "vllm": {"port": port or free_port(), "startup_timeout_s": 90.0, "stop_timeout_s": 5.0},
    })


def server_pids(port: int) -> list[int]:
    """Live processes running `mtpsim serve-reference ... --port PORT`."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z" or b"serve-reference" not in argv:
            continue
        if b"--port" in argv and argv[argv.index(b"--port") + 1] == str(port).encode():
            out.append(int(entry.name))
    return out


@contextmanager
def tiny_app_client(policy: str = "share", **client_kw: Any) -> Iterator[tuple[Any, Any]]:
    """serve-reference's app over a started tiny random-init engine, in-process (no socket):
    yields (fastapi TestClient, EngineLoop) and stops the engine loop afterwards."""
    from fastapi.testclient import TestClient

    from mtpsim.serve_reference.app import create_app
    from mtpsim.serve_reference.loop import EngineLoop
    from mtpsim.serve_reference.server import TINY_RANDOM, ServerOptions, build_engine

    loop = EngineLoop(build_engine(ServerOptions(policy=policy, port=0, weights=TINY_RANDOM,
                                                 max_num_seqs=2, max_model_len=128)))
    loop.start()
    try:
        with TestClient(create_app(loop, "ref", 128), **client_kw) as c:
            yield c, loop
    finally:
        loop.stop()


@contextmanager
def live_tiny_server(step_delay_s: float = 0.0, max_model_len: int = 4096,
                     ) -> Iterator[tuple[int, Any]]:
    """serve-reference's app on a real socket (uvicorn in a thread, logging to the root logger
    so caplog sees it) over a tiny engine whose every step takes at least `step_delay_s`:
    yields (port, EngineLoop)."""
    import threading
    import time

    import uvicorn

    from mtpsim.serve_reference.app import create_app
    from mtpsim.serve_reference.loop import EngineLoop
    from mtpsim.serve_reference.server import TINY_RANDOM, ServerOptions, bind, build_engine

    engine = build_engine(ServerOptions(policy="share", port=0, weights=TINY_RANDOM,
                                        max_num_seqs=2, max_model_len=max_model_len))
    step = engine.step

    def slow_step() -> Any:
        time.sleep(step_delay_s)
        return step()

    engine.step = slow_step
    loop = EngineLoop(engine)
    loop.start()
    sock = bind(free_port())
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(loop, "ref", max_model_len), log_config=None,
                                           log_level="warning", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        yield port, loop
    finally:
        server.should_exit = True
        thread.join(10)
        loop.stop()
        sock.close()
