"""One policy through a server: start it, wait for /health, run the load, scrape the
counters, stop it -> (Result, Trace). `mtpsim run-real` loops over policies, skips the
finished ones and writes each result atomically when its policy completes."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from mtpsim.client.bench import BenchConfig, run_benchmark
from mtpsim.client.workload import (
    BenchRequest,
    random_requests,
    speed_bench_path,
    speed_bench_requests,
)
from mtpsim.errors import UserError
from mtpsim.policies import traits
from mtpsim.result import Result, load_result
from mtpsim.spec import Experiment
from mtpsim.trace import Trace
from mtpsim.vllm_plugin.settings import VLLM_POLICIES
from mtpsim.vllm_runner.argv import (
    reference_serve_argv,
    vllm_bench_argv,
    vllm_serve_argv,
    vllm_serve_env,
)
from mtpsim.vllm_runner.process import ServerProcess, free_port

Progress = Callable[[int, int], None]  # (finished requests, total)
ENGINES = ("vllm", "reference")
BENCH_CLIENTS = ("mtpsim", "vllm")
err_console = Console(stderr=True)


@dataclass(frozen=True, slots=True)
class ServedRun:
    """How `run-real` runs a policy through a server."""

    engine: str  # "vllm" or "reference"
    out: Path  # folder for <policy>.server.log, the plugin's files, bench JSON
    trace: bool = False  # vLLM: eager mode, shadow top-k overlap per draft step
    bench_client: str = "mtpsim"
    weights: str | None = None  # reference: override the spec's weights (tests: random-tiny)
    smoke: bool = False  # vLLM: dummy weights of the shipped shrunken model (smoke.py)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise UserError(None, "--engine", f"expected one of {', '.join(ENGINES)}")
        if self.bench_client not in BENCH_CLIENTS:
            raise UserError(None, "--bench-client", f"expected one of {', '.join(BENCH_CLIENTS)}")
        if self.smoke and (self.engine != "vllm" or not self.trace):
            raise UserError(None, "--smoke", "applies to --engine vllm (in trace mode)")
        if self.trace and self.engine != "vllm":
            raise UserError(None, "--trace", "server trace mode is for --engine vllm (run "
                            "--engine reference without --server for a traced run)")

    @property
    def mode(self) -> str:
        return "vllm" if self.engine == "vllm" else "reference"


@contextlib.contextmanager
def sigterm_as_exit() -> Iterator[None]:
    """Turn SIGTERM into SystemExit while a server runs, so `finally` blocks stop it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def build_requests(exp: Experiment, engine: str) -> list[BenchRequest]:
    w = exp.workload
    if engine == "reference":
        from mtpsim.engine.runner import workload

        # The in-process run's prompts (held-out text) and per-request seeds.
        prompts, out_lens, _ = workload(exp)
        return [BenchRequest(int(n), prompt=list(p), input_len=len(p),
                             seed=exp.seed * 1_000_003 + i)
                for i, (p, n) in enumerate(zip(prompts, out_lens, strict=True))]
    if w.dataset == "speed-bench":
        if not w.dataset_path:
            raise UserError(exp.source, "workload.dataset_path", "expected the folder holding "
                            f"{w.dataset_subset}.jsonl (docs/real-mode.md)")
        path = speed_bench_path(w.dataset_path, w.dataset_subset)
        if not path.is_file():
            raise UserError(path, None, "SPEED-Bench file not found")
        tokenizer = None
        if w.max_input_len:
            try:
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(exp.model.name)
            except (ImportError, OSError, ValueError) as e:
                raise UserError(exp.source, "workload.max_input_len", "cutting prompts needs "
                                f"the tokenizer of {exp.model.name!r}: {e}") from None
        return speed_bench_requests(path,
                                    w.num_prompts, w.output_len, category=w.category,
                                    seed=exp.seed, max_input_len=w.max_input_len,
                                    tokenizer=tokenizer)
    return random_requests(w.num_prompts, w.input_len, w.output_len,
                           vocab_size=exp.model.vocab_size, seed=exp.seed,
                           input_dist=w.input_len_distribution, input_spread=w.input_len_spread,
                           output_dist=w.output_len_distribution,
                           output_spread=w.output_len_spread, backend=w.backend)


def mtpsim_load(exp: Experiment, run: ServedRun, policy: str,
                progress: Progress | None) -> Callable[[str], Result]:
    """The load as mtpsim's client runs it against `base_url`."""
    import asyncio

    w = exp.workload
    requests = build_requests(exp, run.engine)
    backend = "openai" if run.engine == "reference" else w.backend
    model = exp.model.name if run.engine == "vllm" else "mtpsim-reference"

    def load(base_url: str) -> Result:
        cfg = BenchConfig(base_url=base_url, model=model, backend=backend,
                          max_concurrency=w.max_concurrency, request_rate=w.request_rate,
                          burstiness=w.burstiness, num_warmups=w.num_warmups,
                          temperature=w.temperature, ignore_eos=w.ignore_eos, seed=exp.seed,
                          progress=progress is None)
        outcome = asyncio.run(run_benchmark(cfg, requests, on_done=(
            None if progress is None else lambda done: progress(done, len(requests)))))
        result = outcome.to_result(mode=run.mode, policy=policy, seed=exp.seed,
                                   experiment=exp.source, spec=exp.to_dict())
        if outcome.errors:
            result.extra["errors"] = sorted(set(outcome.errors))[:5]
        return result
    return load


def vllm_bench_load(exp: Experiment, run: ServedRun, policy: str) -> Callable[[str], Result]:
    """The load as `vllm bench serve` runs it; its --save-result JSON becomes the Result."""
    def load(base_url: str) -> Result:
        folder = run.out / f"{policy}.vllm-bench"
        folder.mkdir(parents=True, exist_ok=True)
        name = "result.json"
        log = run.out / f"{policy}.vllm-bench.log"
        tokenizer = None
        if run.engine == "reference":
            from mtpsim.serve_reference.tokenizer import write_byte_tokenizer

            tokenizer = write_byte_tokenizer(folder / "tokenizer")
        argv = vllm_bench_argv(exp, base_url, folder, name, reference_tokenizer=tokenizer)
        with open(log, "wb") as f:
            code = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                                  check=False).returncode
        if code != 0:
            raise UserError(log, None, f"vllm bench serve exited with code {code}")
        bench = load_result(folder / name)
        return Result(mode=run.mode, policy=policy, metrics=bench.metrics, seed=exp.seed,
                      experiment=exp.source, spec=exp.to_dict(),
                      extra={"bench_client": "vllm bench serve", "bench_argv": argv,
                             "bench_json": str(folder / name)})
    return load


def run_served_policy(exp: Experiment, policy: str, progress: Progress | None = None, *,
                      run: ServedRun,
                      load: Callable[[str], Result] | None = None) -> tuple[Result, Trace]:
    """Serve `policy`, drive the load, stop the server whatever happens -> (Result, Trace)."""
    if exp.k == 0:
        raise UserError(exp.source, "speculative.num_speculative_tokens", "expected >= 1 for a "
                        "real run (k = 0, plain decoding, is simulated only)")
    if run.engine == "vllm" and policy not in VLLM_POLICIES:
        raise UserError(exp.source, "policies", f"vLLM runs only {', '.join(VLLM_POLICIES)}; "
                        f"{policy!r} needs model code vLLM 0.33.0 lacks")
    port = exp.vllm.port or free_port()
    plugin_dir = run.out / f"{policy}.plugin"
    if run.engine == "vllm":
        try:
            argv = vllm_serve_argv(exp, policy, port, trace=run.trace, smoke=run.smoke)
        except ImportError:
            raise UserError(None, "--engine vllm", "vLLM is not importable here: install "
                            "vllm==0.33.0 on the GPU machine (docs/real-mode.md)") from None
        except ValueError as e:
            raise UserError(exp.source, "model.name", str(e)) from None
        env = vllm_serve_env(exp, policy, plugin_dir, run.trace)
    else:
        # vLLM's client sends random prompts as text: bytes that are not UTF-8 come back as
        # 3-byte replacement characters, so the reference server needs room for longer prompts.
        room = (4 * exp.workload.input_len + exp.workload.output_len
                if run.bench_client == "vllm" else None)
        argv = reference_serve_argv(exp, policy, port, weights=run.weights, max_model_len=room)
        env = {}
    if load is None:
        load = (vllm_bench_load(exp, run, policy) if run.bench_client == "vllm"
                else mtpsim_load(exp, run, policy, progress))
    log = run.out / f"{policy}.server.log"
    with sigterm_as_exit(), ServerProcess(argv, env, log, port,
                                          grace_s=exp.vllm.stop_timeout_s) as server:
        server.wait_healthy(exp.vllm.startup_timeout_s)
        try:
            result = load(server.base_url)
        except Exception:
            server.check_alive()  # a server that died explains the failure (its log tail)
            raise
        server.check_alive()
        if run.engine == "reference" and traits(policy).runs_indexer(0):  # counts to check
            _reference_verdict(server.base_url, policy, result)
    result.extra.update({"engine": run.engine, "server_argv": argv,
                         "server_env": {k: v for k, v in env.items()
                                        if k.startswith(("VLLM_", "MTPSIM_"))}})
    trace = Trace(engine=run.mode, policy=policy, num_speculative_tokens=exp.k,
                  index_topk=exp.index_topk,
                  meta={"note": "served run: per-step records need --trace (vLLM) or the "
                        "in-process reference engine"})
    if run.engine == "vllm":
        trace = _vllm_plugin_outputs(exp, policy, plugin_dir, result, trace, run.trace)
    return result, trace


def _reference_verdict(base_url: str, policy: str, result: Result) -> None:
    """The reference server's per-step indexer counts -> "sharing engaged: ..." (as vLLM's)."""
    import json
    import urllib.request

    from mtpsim.vllm_plugin.counts import PluginCounts, sharing_verdict

    with urllib.request.urlopen(base_url + "/mtpsim/indexer_counts", timeout=10) as r:
        counts = PluginCounts.from_json(json.loads(r.read()))
    line = sharing_verdict(counts).line()
    result.extra.update({"sharing_engaged": line, "plugin_counts": counts.to_json()})
    err_console.print(f"{policy}: {line}", highlight=False)


def _vllm_plugin_outputs(exp: Experiment, policy: str, folder: Path, result: Result,
                         trace: Trace, traced: bool) -> Trace:
    from mtpsim.vllm_plugin.counts import read_counts, sharing_verdict
    from mtpsim.vllm_runner.trace import read_rows, rows_to_trace, truncated_processes

    counts = read_counts(folder) if folder.is_dir() else []
    if not counts:
        line = ("sharing engaged: unknown (the mtpsim plugin wrote no counts: was mtpsim "
                "installed in vLLM's Python?)")
    else:
        # The process that ran the draft model: most forwards, hook or device counted (under a
        # compiled draft model only the device counts exist).
        best = max(counts, key=lambda c: sum(sum(s.forwards) for s in (
            *c.contexts.values(), *(c.device or {}).values())))
        line = sharing_verdict(best).line()
        result.extra["plugin_counts"] = best.to_json()
    result.extra["sharing_engaged"] = line
    err_console.print(f"{policy}: {line}", highlight=False)
    if traced and folder.is_dir():
        trace = rows_to_trace(read_rows(folder), policy, exp.k, exp.index_topk,
                              meta={"source": str(folder)})
    if folder.is_dir() and (cut := truncated_processes(folder)):
        # A worker killed before its exit flush: the counts and rows it had not flushed are
        # gone, so say the trace is short rather than let it pass as complete.
        trace.meta["truncated"] = cut
        result.extra["trace_truncated"] = cut
        err_console.print(f"{policy}: trace truncated: {'; '.join(cut)}", highlight=False)
    return trace
