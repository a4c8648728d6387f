"""A cap on request bodies: the reference server reads a body whole before it parses it, so an
unbounded one (100 MB of prompt) grows memory for nothing; past the cap it answers 413 in
vLLM's error format, as soon as the declared length or the bytes received exceed it."""

from __future__ import annotations

import json
from typing import Any

from mtpsim.serve_reference.errors import error_body

MAX_BODY_BYTES = 4 * 2**20  # 4 MiB: a max_model_len prompt as JSON token ids is far below


class BodyLimit:
    """Pure ASGI middleware (it sees the body as it arrives, before FastAPI buffers it)."""

    def __init__(self, app: Any, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        seen = 0
        refused = False

        async def counted() -> dict:
            nonlocal seen, refused
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    refused = True
                    raise _TooLarge
            return msg

        started = False

        async def tracked_send(msg: dict) -> None:
            nonlocal started
            if refused:  # the app answered a body it could not read: answer 413 instead
                if not started and msg["type"] == "http.response.start":
                    started = True
                    await self._refuse(send)
                return
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, counted, tracked_send)
        except Exception:
            if not refused:
                raise
        if refused and not started:
            await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps(error_body(413, f"Request body larger than {self.limit} bytes",
                                     "BadRequestError")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass
