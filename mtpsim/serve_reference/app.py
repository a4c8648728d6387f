"""The HTTP layer: OpenAI completions and chat completions (streaming or not), `/health`,
`/v1/models` and a vLLM-format `/metrics`."""

from __future__ import annotations

import asyncio
import codecs
import json
import math
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

from mtpsim.client.prometheus import render_spec_decode
from mtpsim.serve_reference.loop import EngineLoop, _Add

EOS = 0
# vLLM's SamplingParams: below 1e-5 is greedy, and a smaller temperature than 1e-2 is raised to
# it, since logits / T would overflow to inf and the softmax to nan, which kills the engine.
SAMPLING_EPS = 1e-5
MIN_TEMPERATURE = 1e-2


def _prompt_tokens(prompt: Any) -> list[int]:
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return [b for b in prompt.encode("utf-8") if b != EOS]
    if isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool)
                                        for t in prompt):
        return list(prompt)
    raise HTTPException(400, "prompt: expected a string or a list of token ids")


def _chat_tokens(messages: Any) -> list[int]:
    if not (isinstance(messages, list) and messages and all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages)):
        raise HTTPException(400, "messages: expected a list of {role, content}")
    # The byte-level model has no chat template: the turns' contents, one per line.
    return _prompt_tokens("".join(m["content"] + "\n" for m in messages))


def _number(body: dict[str, Any], key: str, default: float, kind: type) -> Any:
    v = body.get(key, default)
    if v is None:
        v = default
    if (isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
            or (kind is int and v != int(v))):
        raise HTTPException(400, f"{key}: expected a finite number, got {v!r}")
    return kind(v)


def _temperature(body: dict[str, Any]) -> float:
    t = _number(body, "temperature", 1.0, float)
    if 0 <= t < SAMPLING_EPS:
        return 0.0
    return max(t, MIN_TEMPERATURE) if t > 0 else t  # a negative one: the engine's 400


def create_app(loop: EngineLoop, model_name: str, max_model_len: int) -> FastAPI:
    app = FastAPI(title="mtpsim reference server", docs_url=None, redoc_url=None)
    labels = {"engine": "0", "model_name": model_name}

    @app.get("/health")
    async def health() -> Any:
        if not loop.alive:
            return PlainTextResponse(f"engine stopped: {loop.error!r}", status_code=503)
        return PlainTextResponse("")

    @app.get("/v1/models")
    async def models() -> Any:
        return {"object": "list", "data": [{"id": model_name, "object": "model",
                                            "owned_by": "mtpsim", "max_model_len": max_model_len}]}

    @app.get("/metrics")
    async def metrics() -> Any:
        return PlainTextResponse(render_spec_decode(loop.counters(), labels),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/mtpsim/indexer_counts")
    async def indexer_counts() -> Any:
        """MTP forwards and indexer runs per draft step since start (mtpsim extension)."""
        return loop.indexer.counts.to_json()

    async def body_of(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise HTTPException(400, "expected a JSON body") from None
        if not isinstance(body, dict):
            raise HTTPException(400, "expected a JSON object")
        return body

    @app.post("/v1/completions")
    async def completions(request: Request) -> Any:
        body = await body_of(request)
        tokens = _prompt_tokens(body.get("prompt"))
        max_tokens = _number(body, "max_tokens", 16, int)
        return await _generate(body, tokens, max_tokens, chat=False)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await body_of(request)
        tokens = _chat_tokens(body.get("messages"))
        max_tokens = _number(body, "max_completion_tokens",
                             _number(body, "max_tokens", 16, int), int)
        return await _generate(body, tokens, max_tokens, chat=True)

    async def _generate(body: dict[str, Any], tokens: list[int], max_tokens: int,
                        chat: bool) -> Any:
        temperature = _temperature(body)
        seed = body.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise HTTPException(400, "seed: expected an integer")
        # Read every field before the engine takes the request: a bad one after that would
        # leave it generating for a response that is never sent.
        stream = bool(body.get("stream", False))
        stream_options = body.get("stream_options") or {}
        if not isinstance(stream_options, dict):
            raise HTTPException(400, "stream_options: expected an object")
        usage_wanted = bool(stream_options.get("include_usage", False))
        request_id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        aio = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        acked: asyncio.Future[str | None] = aio.create_future()

        def to_loop(fn: Any, *args: Any) -> None:
            try:
                aio.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the event loop is gone (shutdown); nothing to tell
                pass

        loop.submit(_Add(request_id, tokens, max_tokens, temperature,
                         bool(body.get("ignore_eos", False)), seed,
                         sink=lambda out: to_loop(queue.put_nowait, out),
                         ack=lambda err: to_loop(_resolve, acked, err)))
        err = await acked
        if err is not None:
            raise HTTPException(503 if not loop.alive else 400, err)
        chunks = _chunks(loop, queue, request_id, len(tokens), chat, stream, usage_wanted,
                         model_name)
        if stream:
            return StreamingResponse(chunks, media_type="text/event-stream")
        final: dict[str, Any] = {}
        async for c in chunks:
            final = c  # type: ignore[assignment]
        return JSONResponse(final)

    return app


def _resolve(fut: asyncio.Future[str | None], err: str | None) -> None:
    if not fut.done():
        fut.set_result(err)


async def _chunks(loop: EngineLoop, queue: asyncio.Queue[Any], request_id: str,
                  num_prompt: int, chat: bool, stream: bool, usage_wanted: bool,
                  model_name: str) -> AsyncIterator[Any]:
    """SSE lines when streaming; otherwise one final response dict."""
    created = int(time.time())
    obj = "chat.completion.chunk" if chat else "text_completion"
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text_all, n_out, finished = [], 0, False
    spec: dict[str, Any] | None = None

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        msg = {"id": request_id, "object": obj, "created": created, "model": model_name,
               "choices": choices, **extra}
        return f"data: {json.dumps(msg)}\n\n"

    try:
        if stream and chat:
            yield event([{"index": 0, "delta": {"role": "assistant", "content": ""},
                          "finish_reason": None}])
        while not finished:
            out = await queue.get()
            if isinstance(out, BaseException):
                raise RuntimeError(f"engine failed: {out!r}")
            ids = [t for t in out.new_token_ids if t != EOS]
            n_out += len(out.new_token_ids)
            finished = out.finished
            text = decoder.decode(bytes(ids), final=finished)
            text_all.append(text)
            reason = out.finish_reason if finished else None
            if finished and (c := getattr(out, "counters", None)) is not None:
                spec = {"num_drafts": c.num_drafts, "num_draft_tokens": c.num_draft_tokens,
                        "num_accepted_tokens": c.num_accepted_tokens,
                        "accepted_per_pos": list(c.accepted_per_pos)}
            if stream:
                choice = ({"index": 0, "delta": {"content": text}, "finish_reason": reason}
                          if chat else
                          {"index": 0, "text": text, "logprobs": None, "finish_reason": reason})
                yield event([choice])
    finally:
        if not finished:
            loop.abort(request_id)  # the client went away
    usage = {"prompt_tokens": num_prompt, "completion_tokens": n_out,
             "total_tokens": num_prompt + n_out}
    extra: dict[str, Any] = {"usage": usage}
    if spec is not None:
        extra["spec_decode"] = spec  # mtpsim extension: this request's own counters
    if stream:
        if usage_wanted:
            yield event([], **extra)
        yield "data: [DONE]\n\n"
        return
    text = "".join(text_all)
    choice = ({"index": 0, "message": {"role": "assistant", "content": text},
               "finish_reason": reason} if chat else
              {"index": 0, "text": text, "logprobs": None, "finish_reason": reason})
    yield {"id": request_id, "object": "chat.completion" if chat else "text_completion",
           "created": created, "model": model_name, "choices": [choice], **extra}
