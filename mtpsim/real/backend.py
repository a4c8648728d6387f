"""The real-mode backend seam: what each engine can run, and the one factory.

A backend is one way of running an experiment for real. In-process backends (the reference
engine) run a policy in this process. Served backends start a server, wait until it is ready,
run the workload through the benchmark client, scrape its counts and stop it; the lifecycle is
`mtpsim.vllm_runner.runner.run_served_policy`, and a served backend supplies the engine's part
(its command line, environment, prompts and counters). Commands, sweeps, the cluster path and
doctor read `Capabilities` instead of comparing engine names, so a new engine is one module in
this package and one line in `BACKENDS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError

if TYPE_CHECKING:
    from mtpsim.client.workload import BenchRequest
    from mtpsim.result import Result
    from mtpsim.spec import Experiment
    from mtpsim.trace import Trace

PolicyRunner = Callable[..., "tuple[Result, Trace]"]  # (exp, policy, progress) -> (Result, Trace)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can run and what it needs; read wherever an engine name was compared."""

    mode: str  # Result.mode and Trace.engine of its runs
    served: bool  # behind an HTTP server, measured by a benchmark client
    policies: tuple[str, ...] | None  # the reuse policies it can run (None: every one)
    parallelism: tuple[str, ...]  # spec fields that spread one server over GPUs
    gpus: bool  # needs GPUs: points go to GPU nodes, the simulator's memory check applies
    extras: tuple[str, ...]  # mtpsim.extras it needs where it runs
    node_modules: tuple[str, ...]  # modules that must import on a cluster node that runs it
    trace_mode: bool = False  # a server trace mode (--trace)
    smoke: bool = False  # `run-real --smoke`
    bench_clients: tuple[str, ...] = ("mtpsim",)  # benchmark clients that can drive it
    own_model: str | None = None  # the model it runs instead of the spec's (for titles)
    vllm_plugin: bool = False  # runs mtpsim's vLLM plugin (doctor checks vLLM and the plugin)
    rounds: bool = False  # interleaved rounds of every policy in one process (--rounds)
    probe: bool = False  # the machine-speed probe around its rounds
    level: bool = False  # its runner times the in-engine level probe when asked (level=True)
    weights_by_content: bool = False  # its results record the weights' content hash
    ready_path: str = "/health"  # a served backend is ready when GET ready_path answers 200
    # (exp) -> a line printed before the run (an own_model standing in for the spec's), or None
    note: Callable[[Experiment], str | None] | None = None


class Backend(Protocol):
    name: str  # the --engine value
    flag: str  # how the command line picks it, for messages ("--engine vllm")
    caps: Capabilities

    def refuse(self, exp: Experiment, policies: tuple[str, ...] | list[str]) -> None:
        """Before any work: one UserError for what it cannot run (policies, settings)."""

    def runner(self, out: Path, trace: bool = False, bench_client: str = "mtpsim",
               smoke: bool = False, weights: str | None = None) -> PolicyRunner:
        """The function that runs one policy: (exp, policy, progress) -> (Result, Trace)."""


class ServedBackend(Backend, Protocol):
    """The engine's part of a served run (`run_served_policy` drives start, wait for
    `caps.ready_path`, workload, scrape, stop)."""

    def serve(self, exp: Experiment, policy: str, port: int, run: Any,
              plugin_dir: Path) -> tuple[list[str], dict[str, str]]:
        """The server's argument list (no shell) and extra environment."""

    def requests(self, exp: Experiment) -> list[BenchRequest] | None:
        """Prompts of its own (the reference engine's held-out text), or None: the workload's."""

    def client_api(self, exp: Experiment) -> tuple[str, str]:
        """(the benchmark client's backend API, the model name the server answers to)."""

    def bench_tokenizer(self, folder: Path) -> Path | None:
        """A tokenizer `vllm bench serve` needs for this server (None: the model's own)."""

    def scrape(self, exp: Experiment, policy: str, base_url: str, result: Result) -> None:
        """After the workload, while the server still runs: the engine's counts into
        `result.extra` (`sharing_engaged` when it can be judged)."""

    def collect(self, exp: Experiment, policy: str, plugin_dir: Path, result: Result,
                trace: Trace, traced: bool) -> Trace:
        """After the server stopped (a plugin flushes its files at exit): what it recorded,
        and the trace (`traced`: in the server's trace mode)."""


class ModelServer:
    """Defaults of a served engine that loads a model by name (vLLM, SGLang): the workload's
    prompts, the spec's client API and model name, and the model's own tokenizer."""

    def requests(self, exp: Experiment) -> list[BenchRequest] | None:
        return None

    def client_api(self, exp: Experiment) -> tuple[str, str]:
        return exp.workload.backend, exp.model.name

    def bench_tokenizer(self, folder: Path) -> Path | None:
        return None


# (engine, behind a server) -> "module:class". The reference engine runs in-process or behind
# `mtpsim serve-reference`; the others always serve.
BACKENDS: dict[tuple[str, bool], str] = {
    ("reference", False): "mtpsim.real.reference:InProcessReference",
    ("reference", True): "mtpsim.real.reference:ServedReference",
    ("vllm", True): "mtpsim.real.vllm:Vllm",
    ("sglang", True): "mtpsim.real.sglang:Sglang",
}
ENGINES: tuple[str, ...] = tuple(dict.fromkeys(engine for engine, _ in BACKENDS))


def backend(engine: str, server: bool = False) -> Backend:
    """The backend for `--engine engine` (`--server`: the reference engine behind its server).
    An engine that only serves ignores `server`; an unknown engine is a one-line error."""
    if engine not in ENGINES:
        raise UserError(None, "--engine", f"expected one of {', '.join(ENGINES)}, got {engine!r}")
    in_process = (engine, False) in BACKENDS
    if server and not in_process:
        raise UserError(None, "--server", f"applies to engines that also run in-process "
                        f"({', '.join(e for e, s in BACKENDS if not s)}); {engine} always serves")
    key = (engine, server or not in_process)
    module, cls = BACKENDS[key].split(":")
    return getattr(importlib.import_module(module), cls)()
