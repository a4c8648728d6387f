"""Request bodies as vLLM 0.33.0's OpenAI server types them (`vllm/entrypoints/openai/*/protocol.py`),
cut to what a byte-level model can serve, and the checks vLLM makes after parsing.

Types come first: FastAPI validates a body against these models (lax, like vLLM: `"stream":
"false"` is False, unknown fields are ignored), so a wrongly typed field is vLLM's 400. Then
`check_sampling` applies vLLM's `SamplingParams` ranges (`top_p` in (0, 1], ...), and
`check_supported` refuses, with a 400 naming the field, every value this server would otherwise
ignore: it has no `n`, logprobs, echo, tools, structured output or sampling filters.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from mtpsim.serve_reference.errors import ApiError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Token = Annotated[int, Field(ge=0)]
CHAT_ROLES = ("system", "developer", "user", "assistant")
UNSUPPORTED = "is not supported by the mtpsim reference server"  # vLLM would serve it


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")  # as vLLM: the OpenAI API allows extra fields


class StreamOptions(_Body):
    include_usage: bool | None = False
    continuous_usage_stats: bool | None = False


class _Sampling(_Body):
    """Fields both endpoints share, typed as vLLM types them."""

    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    repetition_penalty: float | None = None
    seed: Int64 | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    ignore_eos: bool = False
    n: int = 1
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    min_tokens: int = 0
    logit_bias: dict[str, float] | None = None
    use_beam_search: bool = False
    response_format: dict[str, Any] | None = None
    structured_outputs: dict[str, Any] | None = None
    allowed_token_ids: list[int] | None = None
    bad_words: list[str] | None = None
    prompt_logprobs: int | None = None


class CompletionRequest(_Sampling):
    prompt: list[Token] | list[list[Token]] | str | list[str] | None = None
    echo: bool | None = False
    logprobs: int | None = None
    best_of: int | None = None  # gone from vLLM; refused here rather than ignored
    suffix: str | None = None


class TextPart(_Body):
    type: str
    text: str | None = None


class ChatMessage(_Body):
    role: str
    content: str | list[TextPart] | None = None


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage]
    max_completion_tokens: int | None = None
    logprobs: bool | None = False
    top_logprobs: int | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None


def _range(req: _Sampling, name: str, ok: Callable[[float], bool], expected: str) -> None:
    value = getattr(req, name, None)  # a field only one endpoint has
    if value is not None and not ok(value):
        raise ApiError(400, f"{name} must be {expected}, got {value}.", name)


def check_sampling(req: _Sampling) -> None:
    """vLLM's `SamplingParams._verify_args` ranges, each a 400 naming the field."""
    _range(req, "temperature", lambda v: math.isfinite(v) and 0 <= v <= 2, "in [0, 2]")
    _range(req, "top_p", lambda v: 0 < v <= 1, "in (0, 1]")
    _range(req, "top_k", lambda v: v >= -1, "0 (disable), -1 or at least 1")
    _range(req, "min_p", lambda v: 0 <= v <= 1, "in [0, 1]")
    _range(req, "presence_penalty", lambda v: -2 <= v <= 2, "in [-2, 2]")
    _range(req, "frequency_penalty", lambda v: -2 <= v <= 2, "in [-2, 2]")
    _range(req, "repetition_penalty", lambda v: math.isfinite(v) and v > 0, "finite and > 0")
    _range(req, "n", lambda v: v >= 1, "at least 1")
    _range(req, "min_tokens", lambda v: v >= 0, "at least 0")
    for name in ("max_tokens", "max_completion_tokens"):
        _range(req, name, lambda v: v >= 1, "at least 1")
    if req.stream_options is not None and not req.stream:
        raise ApiError(400, "Stream options can only be defined when `stream=True`.",
                       "stream_options")


def _off(v: Any) -> bool:
    return v is None or v is False or v == [] or v == {} or v == ""


# Field -> whether its value asks for nothing this server lacks. Anything else is a 400.
_NO_OP: dict[str, Callable[[Any], bool]] = {
    "n": lambda v: v == 1,
    "best_of": lambda v: v is None or v == 1,
    "echo": _off,
    "logprobs": _off,
    "top_logprobs": lambda v: v is None or v == 0,
    "prompt_logprobs": _off,
    "suffix": _off,
    "tools": _off,
    "tool_choice": lambda v: v is None or v == "none",
    "response_format": lambda v: v is None or v == {"type": "text"},
    "structured_outputs": _off,
    "use_beam_search": _off,
    "top_p": lambda v: v is None or v == 1,
    "top_k": lambda v: v is None or v in (0, -1),
    "min_p": lambda v: v is None or v == 0,
    "presence_penalty": lambda v: v is None or v == 0,
    "frequency_penalty": lambda v: v is None or v == 0,
    "repetition_penalty": lambda v: v is None or v == 1,
    "stop": _off,
    "stop_token_ids": _off,
    "min_tokens": lambda v: v == 0,
    "logit_bias": _off,
    "allowed_token_ids": lambda v: v is None,
    "bad_words": _off,
}


def _short(value: Any, limit: int = 80) -> str:
    """The value as the message shows it: bounded, as vLLM bounds what it echoes back."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "...[truncated]"


def check_supported(req: _Sampling) -> None:
    """A 400 for the first field whose value this server would have to ignore."""
    fields = type(req).model_fields
    for name, no_op in _NO_OP.items():
        if name in fields and not no_op(getattr(req, name)):
            raise ApiError(400, f"{name}={_short(getattr(req, name))} {UNSUPPORTED} (it samples "
                           "one sequence from the temperature-scaled distribution, with no "
                           "logprobs, tools or output constraints).", name)
    if req.stream_options is not None and req.stream_options.continuous_usage_stats:
        raise ApiError(400, f"stream_options.continuous_usage_stats {UNSUPPORTED}; usage comes "
                       "once, in the last chunk.", "stream_options")
    if isinstance(req, ChatCompletionRequest):
        for i, m in enumerate(req.messages):
            if m.role not in CHAT_ROLES:
                raise ApiError(400, f"messages[{i}].role={_short(m.role)} {UNSUPPORTED}: expected "
                               f"one of {', '.join(CHAT_ROLES)}.", "messages")
            if isinstance(m.content, list) and any(p.type != "text" or p.text is None
                                                   for p in m.content):
                raise ApiError(400, f"messages[{i}].content: a part other than text "
                               f"{UNSUPPORTED} (a byte-level model).", "messages")
