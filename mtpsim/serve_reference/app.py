"""The HTTP layer: OpenAI completions and chat completions (streaming or not), `/health`,
`/v1/models` and a vLLM-format `/metrics`. Bad requests get vLLM's status codes and error
body (see `protocol`, `errors`); a client that hangs up stops its generation, streaming or not."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from mtpsim.client.prometheus import render_spec_decode
from mtpsim.serve_reference.access_log import KEY, AccessLog, Emit
from mtpsim.serve_reference.body_limit import BodyLimit
from mtpsim.serve_reference.errors import ApiError, ErrorResponse, install_error_handlers
from mtpsim.serve_reference.loop import EngineLoop, _Add
from mtpsim.serve_reference.protocol import (
    UNSUPPORTED,
    ChatCompletionRequest,
    CompletionRequest,
    check_sampling,
    check_supported,
)

EOS = 0
# vLLM's SamplingParams: below 1e-5 is greedy, and a smaller temperature than 1e-2 is raised to
# it, since logits / T would overflow to inf and the softmax to nan, which kills the engine.
SAMPLING_EPS = 1e-5
MIN_TEMPERATURE = 1e-2
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}},
          "description": "The completion; server-sent events with \"stream\": true"},
    400: {"model": ErrorResponse, "description": "Invalid or unsupported parameter"},
    404: {"model": ErrorResponse, "description": "Unknown model"},
    503: {"model": ErrorResponse, "description": "Engine stopped or server shutting down"}}


def _prompt_tokens(prompt: Any, field: str = "prompt") -> list[int]:
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], str | list):
        if len(prompt) != 1:
            raise ApiError(400, f"prompt: a batch of {len(prompt)} prompts {UNSUPPORTED}; "
                           "send one request per prompt.", "prompt")
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        try:
            data = prompt.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate ("\ud800") is valid JSON, not text
            raise ApiError(400, f"{field}: expected text that UTF-8 can encode, got {e.reason} at "
                           f"character {e.start}", field) from None
        return [b for b in data if b != EOS]
    if isinstance(prompt, list):
        return list(prompt)
    raise ApiError(400, "Either prompt or prompt_embeds must be provided.", "prompt")


def _chat_text(req: ChatCompletionRequest) -> str:
    # The byte-level model has no chat template: the turns' contents, one per line.
    def text(content: Any) -> str:
        if isinstance(content, list):
            return "".join(part.text for part in content)
        return content or ""
    return "".join(text(m.content) + "\n" for m in req.messages)


def _temperature(t: float | None) -> float:
    t = 1.0 if t is None else t
    if t < SAMPLING_EPS:
        return 0.0
    return max(t, MIN_TEMPERATURE)


async def _disconnected(request: Request) -> None:
    """Returns when the client hangs up (the body is already read, as with vLLM's
    `with_cancellation`)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _unless_disconnected(request: Request, work: Awaitable[Response]) -> Response:
    """`work`, cancelled (and so its engine request aborted) if the client goes away first."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    done, _ = await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        gone.cancel()
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, ApiError):
        await task
    request.scope.get(KEY, {})["disconnected"] = True
    return Response(status_code=499)  # never delivered; nginx's "client closed request"


def create_app(loop: EngineLoop, model_name: str, max_model_len: int,
               access_log: Emit | None = None) -> Any:
    """The ASGI app; with `access_log`, one line per request goes to it."""
    app = FastAPI(title="mtpsim reference server", docs_url=None, redoc_url=None)
    install_error_handlers(app)
    app.add_middleware(BodyLimit)
    _add_status_routes(app, loop, model_name, max_model_len)
    _add_generation_routes(app, loop, model_name, max_model_len)
    return AccessLog(app, access_log) if access_log is not None else app


def _add_status_routes(app: FastAPI, loop: EngineLoop, model_name: str,
                       max_model_len: int) -> None:
    """`/health`, `/v1/models`, vLLM-format `/metrics` and mtpsim's per-step indexer counts."""
    labels = {"engine": "0", "model_name": model_name}

    @app.get("/health", response_class=PlainTextResponse,
             responses={503: {"description": "The engine has stopped"}})
    async def health() -> Any:
        if not loop.alive:
            return PlainTextResponse(f"engine stopped: {loop.error!r}", status_code=503)
        return PlainTextResponse("")

    @app.get("/v1/models")
    async def models() -> Any:
        return {"object": "list", "data": [{"id": model_name, "object": "model",
                                            "owned_by": "mtpsim", "max_model_len": max_model_len}]}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics() -> Any:
        return PlainTextResponse(render_spec_decode(loop.counters(), labels),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/mtpsim/indexer_counts")
    async def indexer_counts() -> Any:
        """MTP forwards and indexer runs per draft step since start (mtpsim extension)."""
        return loop.indexer.counts.to_json()


def _add_generation_routes(app: FastAPI, loop: EngineLoop, model_name: str,
                           max_model_len: int) -> None:
    """`/v1/completions` and `/v1/chat/completions`: checked as vLLM checks them, then
    generated on the engine loop."""

    def checked(req: CompletionRequest | ChatCompletionRequest, request: Request) -> None:
        media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            raise ApiError(400, "Unsupported Media Type: Only 'application/json' is allowed")
        if req.model and req.model != model_name:  # vLLM: a missing model means the served one
            raise ApiError(404, f"The model `{req.model}` does not exist. Valid aliases: "
                           f"{model_name}.", "model")
        check_sampling(req)
        check_supported(req)

    @app.post("/v1/completions", responses=ERROR_RESPONSES)
    async def completions(req: CompletionRequest, request: Request) -> Any:
        checked(req, request)
        max_tokens = 16 if req.max_tokens is None else req.max_tokens
        return await _generate(loop, model_name, request, req, _prompt_tokens(req.prompt),
                               max_tokens, chat=False)

    @app.post("/v1/chat/completions", responses=ERROR_RESPONSES)
    async def chat(req: ChatCompletionRequest, request: Request) -> Any:
        checked(req, request)
        tokens = _prompt_tokens(_chat_text(req), "messages")
        asked = req.max_completion_tokens or req.max_tokens
        # vLLM's default for chat: whatever the context leaves.
        max_tokens = asked if asked is not None else max(1, max_model_len - len(tokens))
        return await _generate(loop, model_name, request, req, tokens, max_tokens, chat=True)


async def _generate(loop: EngineLoop, model_name: str, request: Request,
                    req: CompletionRequest | ChatCompletionRequest, tokens: list[int],
                    max_tokens: int, chat: bool) -> Any:
    """Submit one request to the engine loop, wait for it to be taken (or refused), then answer
    with its stream, or with the whole completion unless the client hangs up first."""
    request_id = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
    usage_wanted = bool(req.stream_options and req.stream_options.include_usage)
    access = request.scope.get(KEY, {})
    aio = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    acked: asyncio.Future[str | None] = aio.create_future()

    def to_loop(fn: Any, *args: Any) -> None:
        try:
            aio.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the event loop is gone (shutdown); nothing to tell
            pass

    def chunks() -> AsyncIterator[Any]:
        return _chunks(loop, queue, request_id, len(tokens), chat, bool(req.stream),
                       usage_wanted, model_name, access)

    async def whole() -> Response:
        final: dict[str, Any] = {}
        async for c in chunks():
            final = c  # type: ignore[assignment]
        return JSONResponse(final)

    loop.submit(_Add(request_id, tokens, max_tokens, _temperature(req.temperature),
                     req.ignore_eos, req.seed,
                     sink=lambda out: to_loop(queue.put_nowait, out),
                     ack=lambda err: to_loop(_resolve, acked, err)))
    try:
        err = await acked
    except asyncio.CancelledError:
        loop.abort(request_id)  # cancelled before the engine answered: it may take it
        raise
    if err is not None:
        raise ApiError(503 if not loop.accepting else 400, err)
    if req.stream:
        return StreamingResponse(chunks(), media_type="text/event-stream")
    return await _unless_disconnected(request, whole())


def _resolve(fut: asyncio.Future[str | None], err: str | None) -> None:
    if not fut.done():
        fut.set_result(err)


async def _chunks(loop: EngineLoop, queue: asyncio.Queue[Any], request_id: str,
                  num_prompt: int, chat: bool, stream: bool, usage_wanted: bool,
                  model_name: str, access: dict[str, Any]) -> AsyncIterator[Any]:
    """SSE lines when streaming; otherwise one final response dict. Fills `access` with the
    request's tokens and acceptance for the access log."""
    created = int(time.time())
    obj = "chat.completion.chunk" if chat else "text_completion"
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text_all, n_out, finished, reason = [], 0, False, None
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
    except (asyncio.CancelledError, GeneratorExit):
        access["disconnected"] = True
        raise
    finally:
        if not finished:
            loop.abort(request_id)  # the client went away, or the engine failed
        access.update(prompt_tokens=num_prompt, completion_tokens=n_out, finish_reason=reason,
                      spec_decode=spec)
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
