"""Drive a server with a list of requests and measure it (the good half of `vllm bench
serve`): vLLM's arrival schedule (mtpsim.arrivals: gamma gaps rescaled to n / rate, or all at
once), at most `max_concurrency` in flight (a semaphore, as vLLM: a request that waited for a
slot is timed from when it is sent), warm-up requests first, `/metrics` spec-decode counters scraped
before and after, and per-request records that `mtpsim.metrics` turns into vLLM's figures."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from mtpsim.arrivals import send_offsets
from mtpsim.client.prometheus import parse_spec_decode
from mtpsim.client.request import BACKENDS, RequestOutcome, Sampling, count_output_tokens, send
from mtpsim.client.workload import BenchRequest
from mtpsim.dataclass import dataclass
from mtpsim.metrics import SpecDecodeCounters
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result

if TYPE_CHECKING:
    import aiohttp

WARMUP_MAX_TOKENS = 16


@dataclass(frozen=True, slots=True)
class BenchConfig:
    base_url: str  # http://127.0.0.1:PORT
    model: str
    backend: str = "openai"  # "openai" (completions) or "openai-chat"
    max_concurrency: int | None = None
    request_rate: float = math.inf
    burstiness: float = 1.0  # gamma shape of the gaps; 1 = Poisson
    num_warmups: int = 0
    temperature: float = 1.0
    top_p: float = 1.0  # 1: not sent (the server's default)
    ignore_eos: bool = True
    seed: int = 0
    timeout_s: float = 6 * 3600.0
    stall_timeout_s: float = 600.0
    progress: bool = True
    # output text -> its token count under the served model's tokenizer, for a server that
    # sends no usage (vllm bench serve's fallback); None: such a request counts 1 token, as vLLM
    # without a tokenizer
    count_tokens: Callable[[str], int] | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r}: expected one of {', '.join(BACKENDS)}")


@dataclass(slots=True)
class BenchOutcome:
    outcomes: list[RequestOutcome]
    start: float  # perf_counter at the benchmark start (after warm-up)
    duration_s: float
    counters: SpecDecodeCounters | None  # /metrics delta over the run; None: no counters
    errors: list[str] = field(default_factory=list)
    count_tokens: Callable[[str], int] | None = None  # BenchConfig's

    def records(self) -> list[RequestRecord]:
        """Successful requests as `RequestRecord`s, times relative to the run start."""
        out = []
        for i, o in enumerate(self.outcomes):
            if not o.ok:
                continue
            rec = RequestRecord(
                request_id=str(i), input_len=o.input_len,
                output_len=count_output_tokens(o, self.count_tokens),
                arrival_s=o.start - self.start, first_token_s=o.first_token - self.start,
                finish_s=o.end - self.start, itl_s=list(o.itl), itl_count=[1] * len(o.itl))
            if (sd := o.spec_decode) is not None:
                rec.num_drafts = int(sd["num_drafts"])
                rec.num_draft_tokens = int(sd["num_draft_tokens"])
                rec.num_accepted_tokens = int(sd["num_accepted_tokens"])
                rec.accepted_per_pos = [int(x) for x in sd["accepted_per_pos"]]
            out.append(rec)
        return out

    @property
    def num_failed(self) -> int:
        return sum(not o.ok for o in self.outcomes)

    def to_result(self, *, mode: str, policy: str | None, **kw: Any) -> Result:
        records = self.records()
        if not records:
            raise RuntimeError("no request completed: " + "; ".join(self.errors[:3]))
        result = Result.from_requests(mode=mode, policy=policy, requests=records,
                                      duration_s=self.duration_s,
                                      counters=self.counters or SpecDecodeCounters(), **kw)
        result.metrics["failed"] = self.num_failed
        if self.counters is None:
            result.extra.spec_decode_counters = "the server exposes no vllm:spec_decode_*"
        return result


async def fetch_counters(session: aiohttp.ClientSession,
                         base_url: str) -> SpecDecodeCounters | None:
    async with session.get(base_url + "/metrics") as resp:
        if resp.status != 200:
            return None
        return parse_spec_decode(await resp.text())


async def run_benchmark(cfg: BenchConfig, requests: list[BenchRequest],
                        on_done: Callable[[int], None] | None = None) -> BenchOutcome:
    """Warm up, scrape, send every request, scrape again. `on_done(n)` is called as requests
    finish (else a rich progress bar shows when `cfg.progress`)."""
    import aiohttp

    sampling = Sampling(cfg.model, cfg.temperature, cfg.ignore_eos, cfg.top_p)
    limit = cfg.max_concurrency or len(requests) or 1
    connector = aiohttp.TCPConnector(limit=limit, force_close=False)
    # A stream that sends nothing for `stall_timeout_s` is a failed request, not a hang.
    timeout = aiohttp.ClientTimeout(total=cfg.timeout_s, sock_read=cfg.stall_timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout,
                                     read_bufsize=1 << 20) as session:
        if cfg.num_warmups:
            warm = [BenchRequest(min(r.output_len, WARMUP_MAX_TOKENS), r.prompt, r.messages,
                                 r.input_len, r.seed) for r in requests[:cfg.num_warmups]]
            sem0 = asyncio.Semaphore(limit)

            async def one_warm(r: BenchRequest) -> RequestOutcome:
                async with sem0:
                    return await send(session, cfg.base_url, cfg.backend, r, sampling)

            for o in await asyncio.gather(*(one_warm(r) for r in warm)):
                if not o.ok:
                    raise RuntimeError(f"warm-up request failed: {o.error}")
        before = await fetch_counters(session, cfg.base_url)
        outs, start, duration = await _timed_run(session, cfg, requests, sampling, limit,
                                                 on_done)
        after = await fetch_counters(session, cfg.base_url)
    counters = after.delta(before) if before is not None and after is not None else None
    return BenchOutcome(outs, start, duration, counters,
                        errors=[o.error for o in outs if not o.ok], count_tokens=cfg.count_tokens)


async def _timed_run(session: aiohttp.ClientSession, cfg: BenchConfig,
                     requests: list[BenchRequest], sampling: Sampling,
                     limit: int, on_done: Callable[[int], None] | None,
                     ) -> tuple[list[RequestOutcome], float, float]:
    sem = asyncio.Semaphore(limit)
    offsets = send_offsets(len(requests), cfg.request_rate, cfg.burstiness, cfg.seed)
    progress = _progress(cfg.progress and on_done is None, len(requests))
    done = 0
    task_id = progress.add_task("requests", total=len(requests)) if progress else None

    async def one(i: int, r: BenchRequest) -> RequestOutcome:
        nonlocal done
        delay = start + float(offsets[i]) - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)  # a request's clock starts when it is sent
        async with sem:
            o = await send(session, cfg.base_url, cfg.backend, r, sampling)
        done += 1
        if progress is not None:
            progress.advance(task_id)
        if on_done is not None:
            on_done(done)
        return o

    start = time.perf_counter()
    if progress is not None:
        progress.start()
    try:
        outcomes = list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))
    finally:
        if progress is not None:
            progress.stop()
    return outcomes, start, time.perf_counter() - start


def _progress(enabled: bool, total: int) -> Any:
    """A transient bar on stderr, only where stderr is a terminal: elsewhere (a log file, a
    pipe, a sweep worker's captured stderr) rich ends it with a blank line and draws nothing."""
    if not enabled:
        return None
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress("[progress.description]{task.description}", BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                    transient=True)


def run(cfg: BenchConfig, requests: list[BenchRequest]) -> BenchOutcome:
    """Run a benchmark to completion (blocking)."""
    return asyncio.run(run_benchmark(cfg, requests))
