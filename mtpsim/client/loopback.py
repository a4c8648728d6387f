"""A trivial OpenAI-style streaming server (aiohttp, 127.0.0.1) that does no inference: each
request streams `max_tokens` tokens, one a chunk (or `chunk_tokens` a chunk, cycled, as an MTP
step streams its 1 + accepted tokens in one message), `interval_s` apart, then a usage chunk
(unless `usage` is off). It measures the benchmark client alone (benchmarks/bench_client.py)
and tests it; `/metrics` counts one draft per chunk so that counter scraping is exercised too."""

from __future__ import annotations

import asyncio
import json
from dataclasses import field
from typing import Any

from mtpsim.client.prometheus import render_spec_decode
from mtpsim.dataclass import dataclass
from mtpsim.metrics import SpecDecodeCounters

HOST = "127.0.0.1"


@dataclass(slots=True)
class Loopback:
    interval_s: float = 0.0  # pause between chunks (0: as fast as the event loop goes)
    fail_every: int = 0  # every n-th request answers HTTP 500 (0: never)
    k: int = 3
    chunk_tokens: tuple[int, ...] = ()  # tokens per chunk, cycled (empty: one each)
    usage: bool = True  # send the final usage chunk
    counters: SpecDecodeCounters = field(default_factory=SpecDecodeCounters)
    requests: int = 0
    port: int = 0
    _runner: Any = None

    async def start(self) -> str:
        from aiohttp import web

        app = web.Application()
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/health", self._health)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://{HOST}:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _health(self, _request: Any) -> Any:
        from aiohttp import web

        return web.Response(text="")

    async def _metrics(self, _request: Any) -> Any:
        from aiohttp import web

        return web.Response(text=render_spec_decode(self.counters, {"engine": "0"}))

    async def _completions(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        self.requests += 1
        if self.fail_every and self.requests % self.fail_every == 0:
            return web.Response(status=500, text="injected failure")
        chat = "messages" in body
        n = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        sent, i = 0, 0
        while sent < n:
            m = min(self.chunk_tokens[i % len(self.chunk_tokens)] if self.chunk_tokens else 1,
                    n - sent)
            sent += m
            choice = ({"index": 0, "delta": {"content": "x" * m}} if chat
                      else {"index": 0, "text": "x" * m})
            choice["finish_reason"] = "length" if sent == n else None
            await resp.write(b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n")
            self.counters.add(self.k, min(i % (self.k + 1), self.k))
            i += 1
            if self.interval_s:
                await asyncio.sleep(self.interval_s)
        if self.usage:
            usage = {"prompt_tokens": 1, "completion_tokens": n, "total_tokens": n + 1}
            await resp.write(b"data: " + json.dumps({"choices": [], "usage": usage}).encode()
                             + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp
