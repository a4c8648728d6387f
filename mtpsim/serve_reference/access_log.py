"""One access-log line per HTTP request, in uvicorn's form as `vllm serve` prints it, plus the
request's tokens and draft acceptance once it is done (an ASGI middleware; handlers fill in
`scope["mtpsim.access"]`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

Emit = Callable[[str], None]
KEY = "mtpsim.access"  # scope key: the handler's per-request facts for the log line


def stamp(message: str, level: str = "INFO") -> str:
    """vLLM's log prefix: `INFO 12-01 10:31:02 message`."""
    return f"{level} {time.strftime('%m-%d %H:%M:%S')} {message}"


def describe(info: dict[str, Any]) -> str:
    """Tokens and acceptance of a finished generation, or '' for other requests."""
    if "prompt_tokens" not in info:
        return ""
    out = f"{info['prompt_tokens']} prompt + {info['completion_tokens']} completion tokens"
    spec = info.get("spec_decode")
    if spec and spec["num_draft_tokens"]:
        rate = spec["num_accepted_tokens"] / spec["num_draft_tokens"]
        length = 1 + spec["num_accepted_tokens"] / spec["num_drafts"]
        out += (f", acceptance {rate:.0%} ({spec['num_accepted_tokens']}/"
                f"{spec['num_draft_tokens']} draft tokens, mean length {length:.2f})")
    if info.get("finish_reason"):
        out += f", finish {info['finish_reason']}"
    return out


def line(scope: dict[str, Any], status: int, info: dict[str, Any]) -> str:
    host, port = scope.get("client") or ("-", 0)
    path = scope.get("path", "")
    if scope.get("query_string"):
        path += "?" + scope["query_string"].decode("latin-1")
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    text = (f'{host}:{port} - "{scope.get("method", "")} {path} '
            f'HTTP/{scope.get("http_version", "1.1")}" {status} {phrase}').rstrip()
    if details := describe(info):
        text += f" - {details}"
    if info.get("disconnected"):
        text += " (client disconnected; generation stopped)"
    return text


class AccessLog:
    """ASGI middleware: after each HTTP request, `emit(line)`."""

    def __init__(self, app: Any, emit: Emit) -> None:
        self.app, self.emit = app, emit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        info: dict[str, Any] = {}
        scope[KEY] = info
        status = [500]  # what a handler that raised before answering ends as

        async def send_and_note(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            self.emit(line(scope, status[0], info))
