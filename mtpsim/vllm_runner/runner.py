"""One policy through a server: start it, wait for /health, run the load, scrape the
counters, stop it -> (Result, Trace). The engine's part (its command line, prompts, counters)
comes from its served backend (mtpsim.real); `mtpsim run-real` loops over policies, skips the
finished ones and writes each result atomically when its policy completes."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mtpsim.blas_threads import user_environ
from mtpsim.client.bench import BenchConfig, run_benchmark
from mtpsim.client.workload import (
    BenchRequest,
    random_requests,
    speed_bench_path,
    speed_bench_requests,
)
from mtpsim.console import StdConsole
from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError
from mtpsim.real.backend import BACKENDS, ServedBackend, backend
from mtpsim.records import RunExtra
from mtpsim.result import Result, load_result
from mtpsim.spec import Experiment
from mtpsim.trace import Trace
from mtpsim.trace_records import TraceMeta
from mtpsim.vllm_runner.argv import vllm_bench_argv
from mtpsim.vllm_runner.process import ServerProcess, free_port

Progress = Callable[[int, int], None]  # (finished requests, total)
err_console = StdConsole(stderr=True)


@dataclass(frozen=True, slots=True)
class ServedRun:
    """How `run-real` runs a policy through a server."""

    engine: str  # an engine of mtpsim.real.ENGINES, run behind its server
    out: Path  # folder for <policy>.server.log, the plugin's files, bench JSON
    trace: bool = False  # vLLM: eager mode, shadow top-k overlap per draft step
    bench_client: str = "mtpsim"
    weights: str | None = None  # reference: override the spec's weights (tests: random-tiny)
    smoke: bool = False  # vLLM: dummy weights of the shipped shrunken model (smoke.py)

    def __post_init__(self) -> None:
        caps = self.backend.caps
        if self.bench_client not in BENCH_CLIENTS:
            raise UserError(None, "--bench-client", f"expected one of {', '.join(BENCH_CLIENTS)}")
        if self.bench_client not in caps.bench_clients:
            raise UserError(None, "--bench-client", f"expected {', '.join(caps.bench_clients)} "
                            f"with --engine {self.engine}")
        if self.smoke and (not caps.smoke or not self.trace):
            raise UserError(None, "--smoke", f"not offered by --engine {self.engine} (it needs a "
                            "server trace mode and the shipped smoke model: --engine vllm)")
        if self.trace and not caps.trace_mode:
            raise UserError(None, "--trace", f"--engine {self.engine} has no server trace mode "
                            "(run --engine reference without --server for a traced run)")

    @property
    def backend(self) -> ServedBackend:
        """The engine behind its server (the reference engine's served variant)."""
        return backend(self.engine, server=(self.engine, False) in BACKENDS)  # type: ignore[return-value]

    @property
    def mode(self) -> str:
        return self.backend.caps.mode


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


def build_requests(exp: Experiment, run: ServedRun) -> list[BenchRequest]:
    """The engine's own prompts (the reference engine's), else the workload's."""
    own = run.backend.requests(exp)
    if own is not None:
        return own
    w = exp.workload
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
    requests = build_requests(exp, run)
    api, model = run.backend.client_api(exp)

    def load(base_url: str) -> Result:
        cfg = BenchConfig(base_url=base_url, model=model, backend=api,
                          max_concurrency=w.max_concurrency, request_rate=w.request_rate,
                          burstiness=w.burstiness, num_warmups=w.num_warmups,
                          temperature=w.temperature, top_p=w.top_p, ignore_eos=w.ignore_eos,
                          seed=exp.seed,
                          progress=progress is None)
        outcome = asyncio.run(run_benchmark(cfg, requests, on_done=(
            None if progress is None else lambda done: progress(done, len(requests)))))
        result = outcome.to_result(mode=run.mode, policy=policy, seed=exp.seed,
                                   experiment=exp.source, spec=exp.to_dict())
        if outcome.errors:
            result.extra.errors = sorted(set(outcome.errors))[:5]
        return result
    return load


def vllm_bench_load(exp: Experiment, run: ServedRun, policy: str,
                    progress: Progress | None = None) -> Callable[[str], Result]:
    """The load as `vllm bench serve` runs it; its --save-result JSON becomes the Result
    (`progress` unused: vllm bench serve prints its own)."""
    def load(base_url: str) -> Result:
        folder = run.out / f"{policy}.vllm-bench"
        folder.mkdir(parents=True, exist_ok=True)
        name = "result.json"
        log = run.out / f"{policy}.vllm-bench.log"
        tokenizer = run.backend.bench_tokenizer(folder)
        argv = vllm_bench_argv(exp, base_url, folder, name, reference_tokenizer=tokenizer)
        with open(log, "wb") as f:
            code = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, env=user_environ(),
                                  check=False).returncode
        if code != 0:
            raise UserError(log, None, f"vllm bench serve exited with code {code}")
        bench = load_result(folder / name)
        return Result(mode=run.mode, policy=policy, metrics=bench.metrics, seed=exp.seed,
                      experiment=exp.source, spec=exp.to_dict(),
                      extra=RunExtra(bench_client="vllm bench serve", bench_argv=argv,
                                     bench_json=str(folder / name)))
    return load


# --bench-client -> the load it drives against the server: (exp, run, policy, progress) ->
# (base URL -> Result); vllm bench serve shows its own progress
LOADS: dict[str, Callable[..., Callable[[str], Result]]] = {
    "mtpsim": mtpsim_load,
    "vllm": vllm_bench_load,
}
BENCH_CLIENTS = tuple(LOADS)


def run_served_policy(exp: Experiment, policy: str, progress: Progress | None = None, *,
                      run: ServedRun,
                      load: Callable[[str], Result] | None = None) -> tuple[Result, Trace]:
    """Serve `policy`, drive the load, stop the server whatever happens -> (Result, Trace)."""
    engine = run.backend
    engine.refuse(exp, [policy])
    port = exp.vllm.port or free_port()
    plugin_dir = run.out / f"{policy}.plugin"
    if load is None:  # the workload's prompts first: a bad dataset_path is refused in a second,
        load = LOADS[run.bench_client](exp, run, policy, progress)  # not after vLLM's import
    argv, env = engine.serve(exp, policy, port, run, plugin_dir)
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
        engine.scrape(exp, policy, server.base_url, result)
    result.extra.engine, result.extra.server_argv = run.engine, argv
    result.extra.server_env = {k: v for k, v in env.items() if k.startswith(("VLLM_", "MTPSIM_"))}
    trace = Trace(engine=run.mode, policy=policy, num_speculative_tokens=exp.k,
                  index_topk=exp.index_topk,
                  meta=TraceMeta(note="served run: per-step records need --trace (vLLM) or the "
                                 "in-process reference engine"))
    return result, engine.collect(exp, policy, plugin_dir, result, trace, run.trace)


def served_runner(engine: ServedBackend, out: Path, trace: bool = False,
                  bench_client: str = "mtpsim", smoke: bool = False,
                  weights: str | None = None) -> Callable[..., tuple[Result, Trace]]:
    """(exp, policy, progress) -> (Result, Trace) through `engine`'s server."""
    run = ServedRun(engine.name, out, trace, bench_client, weights=weights, smoke=smoke)

    def runner(exp: Experiment, policy: str, progress: Progress | None = None,
               **kw: Any) -> tuple[Result, Trace]:
        return run_served_policy(exp, policy, progress, run=run, **kw)
    return runner


def _reference_verdict(base_url: str, policy: str, result: Result) -> None:
    """The reference server's per-step indexer counts -> "sharing engaged: ..." (as vLLM's)."""
    import json
    import urllib.request

    from mtpsim.vllm_plugin.counts import PluginCounts, sharing_verdict

    with urllib.request.urlopen(base_url + "/mtpsim/indexer_counts", timeout=10) as r:
        counts = PluginCounts.from_json(json.loads(r.read()))
    line = sharing_verdict(counts).line()
    result.extra.sharing_engaged, result.extra.plugin_counts = line, counts.to_json()
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
        result.extra.plugin_counts = best.to_json()
    result.extra.sharing_engaged = line
    err_console.print(f"{policy}: {line}", highlight=False)
    if traced and folder.is_dir():
        trace = rows_to_trace(read_rows(folder), policy, exp.k, exp.index_topk,
                              meta=TraceMeta(source=str(folder)))
    if folder.is_dir() and (cut := truncated_processes(folder)):
        # A worker killed before its exit flush: the counts and rows it had not flushed are
        # gone, so say the trace is short rather than let it pass as complete.
        trace.meta.truncated = cut
        result.extra.trace_truncated = cut
        err_console.print(f"{policy}: trace truncated: {'; '.join(cut)}", highlight=False)
    return trace
