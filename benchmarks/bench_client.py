"""How fast is mtpsim's benchmark client on its own? Is it ever the bottleneck?

A trivial streaming server (`mtpsim.client.loopback`, no inference, one token per chunk:
the client's worst case, since vLLM's spec-decode streams carry ~2.8 tokens per chunk) runs in
a child process; the client drives it at the PR's concurrency (32 streams of 2,048 tokens)
and reports the requests/s and streamed tokens/s it sustains, and its own CPU time. A second,
paced run (the server sleeps `--interval-ms` between chunks) shows how much the client adds to
measured inter-token latencies.

    python benchmarks/bench_client.py                # 64 requests x 2,048 tokens, conc 32
    python benchmarks/bench_client.py --json out.json

The PR's load for comparison: 0.80 req/s, 1,641 output tok/s (~580 chunks/s at 2.82 tokens
per chunk) with 32 streams in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import resource
import statistics
import time

from mtpsim.client.bench import BenchConfig, run_benchmark
from mtpsim.client.loopback import Loopback
from mtpsim.client.workload import BenchRequest
from mtpsim.vllm_runner.process import free_port

PR_OUTPUT_TOK_S = 1640.71
PR_REQ_S = 0.80
PR_TOKENS_PER_CHUNK = 2.82


def _serve(port: int, interval_s: float, ready: mp.Event) -> None:  # type: ignore[valid-type]
    async def main() -> None:
        server = Loopback(interval_s=interval_s, port=port)
        await server.start()
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


def measure(num_requests: int, output_len: int, concurrency: int, interval_s: float) -> dict:
    port = free_port()
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_serve, args=(port, interval_s, ready), daemon=True)
    proc.start()
    try:
        if not ready.wait(60):
            raise RuntimeError("loopback server did not start")
        cfg = BenchConfig(base_url=f"http://127.0.0.1:{port}", model="loopback",
                          backend="openai-chat", max_concurrency=concurrency, progress=False)
        reqs = [BenchRequest(output_len, prompt="hello") for _ in range(num_requests)]
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        out = asyncio.run(run_benchmark(cfg, reqs))
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        proc.terminate()
        proc.join(10)
    res = out.to_result(mode="reference", policy=None)
    itls = [x for r in out.records() for x in r.itl_s]
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return {"requests": num_requests, "output_len": output_len, "concurrency": concurrency,
            "interval_ms": interval_s * 1e3, "failed": out.num_failed,
            "duration_s": res.get("duration"), "request_throughput": res.get("request_throughput"),
            "output_throughput": res.get("output_throughput"),
            "client_cpu_s": cpu, "client_cpu_share": cpu / wall,
            "client_cpu_us_per_chunk": 1e6 * cpu / max(len(itls) + num_requests, 1),
            "median_itl_ms": 1e3 * statistics.median(itls) if itls else None,
            "p99_itl_ms": res.get("p99_itl_ms")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=2048)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--interval-ms", type=float, default=5.0, help="paced run's chunk gap")
    ap.add_argument("--paced-output-len", type=int, default=256)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    flat = measure(args.requests, args.output_len, args.concurrency, 0.0)
    paced = measure(args.concurrency, args.paced_output_len, args.concurrency,
                    args.interval_ms / 1e3)
    pr_chunks = PR_OUTPUT_TOK_S / PR_TOKENS_PER_CHUNK
    print(f"unpaced: {flat['requests']} requests x {flat['output_len']} tokens, "
          f"{flat['concurrency']} concurrent, one token per chunk")
    print(f"  {flat['request_throughput']:.2f} req/s, {flat['output_throughput']:,.0f} streamed "
          f"tokens/s (= chunks/s), client CPU {flat['client_cpu_s']:.1f} s "
          f"({100 * flat['client_cpu_share']:.0f}% of one core, "
          f"{flat['client_cpu_us_per_chunk']:.0f} us per chunk), failed {flat['failed']}")
    print(f"  vs the PR's load ({PR_REQ_S} req/s, {PR_OUTPUT_TOK_S:,.0f} tok/s, ~{pr_chunks:.0f} "
          f"chunks/s): {flat['request_throughput'] / PR_REQ_S:.0f}x the request rate, "
          f"{flat['output_throughput'] / pr_chunks:.0f}x the chunk rate")
    print(f"paced: server gap {paced['interval_ms']:.1f} ms, {paced['concurrency']} streams: "
          f"median ITL {paced['median_itl_ms']:.2f} ms, p99 {paced['p99_itl_ms']:.2f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"unpaced": flat, "paced": paced}, f, indent=2)


if __name__ == "__main__":
    main()
