"""Build the reference engine for a policy and serve it on 127.0.0.1 (blocking)."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError
from mtpsim.serve_reference.access_log import stamp

HOST = "127.0.0.1"  # never configurable: the server has no authentication
TINY_RANDOM = "random-tiny"  # weights value for tests: a 1-layer random-init model


@dataclass(frozen=True, slots=True)
class ServerOptions:
    policy: str
    port: int
    model_name: str = "mtpsim-reference"
    weights: str = "builtin"  # a size (builtin = base, small, large), a path, or TINY_RANDOM
    num_speculative_tokens: int = 3
    index_topk: int | None = None  # None: the weights' own
    max_num_seqs: int = 8
    max_model_len: int = 4096
    device: str = "cpu"
    threads: int = 0
    seed: int = 0
    exit_with_parent: bool = False
    quiet: bool = False  # no start-up line and no access log (errors still print)


def build_engine(opts: ServerOptions) -> Any:
    import torch

    from mtpsim.engine import weights as weights_mod
    from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
    from mtpsim.engine.model import ModelArgs, Transformer

    if opts.threads:
        torch.set_num_threads(opts.threads)
    if opts.weights == TINY_RANDOM:
        torch.manual_seed(opts.seed)
        model = Transformer(ModelArgs(n_layer=1, dim=32, n_head=2, intermediate_size=64,
                                      n_index_head=2, index_head_dim=8, index_topk=16,
                                      max_seq_len=opts.max_model_len + 64)).eval()
    else:
        model = weights_mod.load(weights_mod.resolve(opts.weights), device=opts.device)
    model = model.to(opts.device)
    cfg = EngineConfig(num_speculative_tokens=opts.num_speculative_tokens,
                       index_topk=opts.index_topk or model.args.index_topk,
                       max_num_seqs=opts.max_num_seqs, max_model_len=opts.max_model_len,
                       policy=opts.policy)
    return SpecDecodeEngine(model, cfg, seed=opts.seed)


PARENT_ENV = "MTPSIM_PARENT_PID"  # the runner's PID, set in the server's environment


def launcher_pid() -> int:
    """The process that launched this one: the PID the runner put in the environment (read
    even if the runner is already gone), else the parent as first seen."""
    v = os.environ.get(PARENT_ENV, "")
    return int(v) if v.isdigit() else os.getppid()


def watch_parent(parent: int) -> None:
    """End this server when `parent` is gone (even after a SIGKILL, even before the engine is
    built): started first thing, so a runner killed during start-up leaves nothing serving."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


def _stop_as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def bind(port: int) -> socket.socket:
    """The listening socket, bound before the engine is built so a taken port fails at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as e:
        sock.close()
        raise UserError("--port", None,
                        f"expected a free port on {HOST}, got {port} ({e.strerror})") from None
    return sock


def startup_line(opts: ServerOptions, index_topk: int, device: str) -> str:
    return (f"mtpsim reference server listening on http://{HOST}:{opts.port} (model "
            f"{opts.model_name}, policy {opts.policy}, k={opts.num_speculative_tokens}, "
            f"top-k {index_topk}, {device}); Ctrl-C stops it")


def _say(message: str) -> None:
    print(stamp(message), flush=True)


def serve(opts: ServerOptions) -> None:
    import uvicorn

    from mtpsim.serve_reference.app import create_app
    from mtpsim.serve_reference.loop import EngineLoop

    # SIGTERM stops the server as Ctrl-C does (uvicorn re-raises the signal it caught once it
    # has shut down: as an interrupt it reaches the "stopped" line instead of killing us first)
    signal.signal(signal.SIGTERM, _stop_as_interrupt)

    def engine_failed(error: BaseException) -> None:
        # A server whose engine is dead must not look healthy: exit, so the runner sees it.
        os.kill(os.getpid(), signal.SIGTERM)

    sock = bind(opts.port)
    try:
        engine = build_engine(opts)
    except KeyboardInterrupt:  # Ctrl-C while the weights load: nothing to shut down
        sock.close()
        _say("mtpsim reference server stopped before it started")
        return
    loop = EngineLoop(engine, on_error=engine_failed)
    loop.start()
    ready = None if opts.quiet else startup_line(opts, engine.cfg.index_topk, str(engine.device))

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if ready and self.started:
                _say(ready)

        def handle_exit(self, sig: int, frame: Any) -> None:
            # Ctrl-C / SIGTERM: end the live requests (their streams finish with reason
            # "abort"), so shutdown waits on nothing and cancels no task mid-request.
            loop.abort_all()
            super().handle_exit(sig, frame)

    try:
        app = create_app(loop, opts.model_name, opts.max_model_len,
                         access_log=None if opts.quiet else _say)
        config = uvicorn.Config(app, host=HOST, port=opts.port, log_level="warning",
                                access_log=False, timeout_graceful_shutdown=2)
        Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it has already handled
        pass
    finally:
        loop.stop()
        sock.close()
    if not opts.quiet:
        _say("mtpsim reference server stopped")
