"""One arrival rule, vLLM 0.33.0's `vllm bench serve`: the schedule equals vLLM's own
`get_request` (run from vLLM's source), and the simulator, the reference runner and the
benchmark client send on that schedule and stamp a request that waited for a slot alike."""

from __future__ import annotations
import __future__

import ast
import asyncio
import importlib.util
import math
import types
from collections.abc import AsyncGenerator, Iterable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from mtpsim.arrivals import arrival_gaps, send_offsets
from mtpsim.sim.simulator import Simulator
from mtpsim.spec import experiment_from_dict

N, RATE, BURST, SEED = 12, 3.0, 0.5, 7


def vllm_get_request() -> Any:
    """vLLM's `get_request` (and its helper) compiled from vLLM's own source, with a fake
    clock: importing vllm.benchmarks.serve itself takes most of a minute."""
    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.submodule_search_locations, "vLLM 0.33.0 is a test dependency"
    path = Path(spec.submodule_search_locations[0]) / "benchmarks" / "serve.py"
    tree = ast.parse(path.read_text())
    wanted = {"get_request", "_get_current_request_rate"}
    funcs = [n for n in tree.body if isinstance(n, ast.AsyncFunctionDef | ast.FunctionDef)
             and n.name in wanted]
    assert {f.name for f in funcs} == wanted, f"{path} changed: {wanted} not found"
    clock = {"now": 1000.0}
    gammas: list[tuple[float, float]] = []

    async def sleep(s: float) -> None:
        clock["now"] += s

    ns: dict[str, Any] = {
        "np": types.SimpleNamespace(random=types.SimpleNamespace(gamma=None)),
        "time": types.SimpleNamespace(time=lambda: clock["now"]),
        "asyncio": types.SimpleNamespace(sleep=sleep), "Iterable": Iterable,
        "AsyncGenerator": AsyncGenerator, "Literal": Literal}
    code = compile(ast.Module(body=funcs, type_ignores=[]), str(path), "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    exec(code, ns)  # noqa: S102 - vLLM's own source, to compare against

    def schedule(n: int, rate: float, burstiness: float, gaps: np.ndarray) -> np.ndarray:
        it = iter(gaps.tolist())

        def gamma(shape: float, scale: float) -> float:
            gammas.append((shape, scale))
            return next(it)

        ns["np"].random.gamma = gamma
        start = clock["now"]
        sent: list[float] = []

        async def go() -> None:
            async for _ in ns["get_request"](list(range(n)), rate, burstiness):
                sent.append(clock["now"] - start)
        asyncio.run(go())
        return np.asarray(sent)

    schedule.gammas = gammas  # type: ignore[attr-defined]
    return schedule


@pytest.mark.parametrize(("rate", "burstiness"), [(RATE, BURST), (0.7, 1.0), (5.0, math.inf),
                                                  (math.inf, 1.0)])
def test_the_schedule_is_vllm_bench_get_request(rate, burstiness):
    vllm = vllm_get_request()
    gaps = arrival_gaps(N, rate, burstiness, SEED)
    theirs = vllm(N, rate, burstiness, gaps)
    ours = send_offsets(N, rate, burstiness, SEED)
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-9)
    if math.isfinite(rate) and math.isfinite(burstiness):
        assert vllm.gammas == [(burstiness, 1.0 / (rate * burstiness))] * N
        assert ours[0] > 0  # the first request waits its own gap
        assert ours[-1] == pytest.approx(N / rate, rel=1e-12)


def experiment(tmp_path: Path | None = None, **workload: Any):
    w = {"num_prompts": N, "input_len": 20, "output_len": 6, "request_rate": RATE,
         "burstiness": BURST, "max_concurrency": 1, **workload}
    raw: dict[str, Any] = {"policies": ["fresh"], "seed": SEED, "workload": w, "engine": {"tp": 8},
                           "speculative": {"num_speculative_tokens": 2, "index_topk": 8}}
    if tmp_path is not None:
        raw["reference"] = {"weights": str(tmp_path / "tiny.safetensors"), "device": "cpu",
                            "threads": 1, "clock": "cpu"}
    return experiment_from_dict(raw)


def assert_slot_rule(records, scheduled: np.ndarray, tol: float = 0.0) -> None:
    """At concurrency 1: request i is sent at its scheduled time or, if request i-1 was still
    running then, when it finished (and timed from then)."""
    recs = sorted(records, key=lambda r: int(r.request_id.split("-")[-1]))
    waited = 0
    for i, r in enumerate(recs):
        expect = scheduled[i] if i == 0 else max(scheduled[i], recs[i - 1].finish_s)
        waited += i > 0 and recs[i - 1].finish_s > scheduled[i]
        assert r.arrival_s == pytest.approx(expect, abs=tol + 1e-12)
    assert waited, "the case should make some request wait for the slot"


def test_the_simulator_sends_on_the_schedule_and_stamps_when_the_slot_frees():
    exp = experiment(output_len=40)  # ~ 0.5 s per request at ~ 3 sends per second
    sim = Simulator(exp, "fresh")
    # the client sits behind the frontend entity (mtpsim.sim.frontend: no API-server costs
    # here, so requests reach the engine when the client sends them)
    assert np.array_equal(sim.frontend.client.intended_s, send_offsets(N, RATE, BURST, SEED))
    res = sim.run()
    assert_slot_rule(res.requests, send_offsets(N, RATE, BURST, SEED))


def test_the_reference_runner_sends_on_the_same_schedule_and_stamps_alike(tmp_path):
    torch = pytest.importorskip("torch")
    from _reference_models import tiny_model

    from mtpsim.engine import weights
    from mtpsim.engine.runner import run_policy, workload

    weights.save(tiny_model(vocab=256).float(), tmp_path / "tiny.safetensors", torch.float32, {})
    # a slow engine clock is not needed: the CPU clock of 12 requests x 6 tokens is ~0.1-1 s,
    # so make the rate high enough that requests queue for the one slot
    exp = experiment(tmp_path, request_rate=40.0)
    scheduled = workload(exp)[2]
    assert np.array_equal(scheduled, send_offsets(N, 40.0, BURST, SEED))
    result, _ = run_policy(exp, "fresh")
    assert_slot_rule(result.requests, scheduled)


def test_the_benchmark_client_sends_on_the_same_schedule_and_stamps_alike():
    pytest.importorskip("aiohttp")
    from mtpsim.client.bench import BenchConfig, run_benchmark
    from mtpsim.client.loopback import Loopback
    from mtpsim.client.workload import BenchRequest

    rate = 25.0  # 12 requests over 0.48 s; each takes >= 40 ms, so some wait for the slot
    server = Loopback(interval_s=0.01)

    async def go():
        url = await server.start()
        try:
            cfg = BenchConfig(base_url=url, model="m", progress=False, max_concurrency=1,
                              request_rate=rate, burstiness=BURST, seed=SEED)
            return await run_benchmark(cfg, [BenchRequest(5, prompt=[1, 2], input_len=2)
                                             for _ in range(N)])
        finally:
            await server.stop()

    out = asyncio.run(go())
    # real time on a shared machine: a send may lag its due time by scheduling noise
    assert_slot_rule(out.records(), send_offsets(N, rate, BURST, SEED), tol=0.05)
