"""One streamed OpenAI-compatible request (completions or chat), timed chunk by chunk the way
`vllm bench serve` does: TTFT at the first chunk carrying output, one ITL per later chunk
(a chunk may carry several tokens under speculative decoding), output tokens from the final
`usage` chunk. Where a server sends no usage (or 0), vLLM counts the generated text's tokens with
the served model's tokenizer, or takes 1 without one, and never the chunks, which under MTP carry
several tokens each (vLLM 0.33.0 vllm/benchmarks/serve.py:636-651): `output_len` is then 0 and
`BenchOutcome` applies that rule (`count_output_tokens`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from mtpsim.client.workload import BenchRequest
from mtpsim.dataclass import dataclass

if TYPE_CHECKING:
    import aiohttp

BACKENDS = {"openai": "/v1/completions", "openai-chat": "/v1/chat/completions"}


@dataclass(slots=True)
class RequestOutcome:
    """What the client saw of one request; times are `time.perf_counter()` seconds."""

    ok: bool = False
    error: str = ""
    input_len: int = 0
    output_len: int = 0  # the usage chunk's completion_tokens; 0: none sent (count_output_tokens)
    text: str = ""  # the streamed output text, as vLLM's generated_text
    start: float = 0.0
    first_token: float = 0.0
    end: float = 0.0
    itl: list[float] = field(default_factory=list)
    spec_decode: dict[str, Any] | None = None  # the request's own counters, where the server
    # reports them (`mtpsim serve-reference` does, next to `usage`; vLLM does not)


@dataclass(frozen=True, slots=True)
class Sampling:
    model: str
    temperature: float = 1.0
    ignore_eos: bool = True
    top_p: float = 1.0  # 1: not sent


def build_payload(backend: str, req: BenchRequest, sampling: Sampling) -> dict[str, Any]:
    payload: dict[str, Any] = {"model": sampling.model, **req.payload(backend),
                               "temperature": sampling.temperature, "stream": True,
                               "stream_options": {"include_usage": True}}
    if backend == "openai-chat":
        payload["max_completion_tokens"] = req.output_len
    else:
        payload["max_tokens"] = req.output_len
    if sampling.top_p < 1.0:
        payload["top_p"] = sampling.top_p
    if sampling.ignore_eos:
        payload["ignore_eos"] = True  # a vLLM extension; generate exactly max_tokens
    return payload


def _has_output(backend: str, choice: dict[str, Any]) -> bool:
    """Whether a message's first choice is an output chunk (TTFT or one ITL): for completions
    any choice, its text may be empty or absent (vLLM 0.33.0 vllm/benchmarks/lib/
    endpoint_request_func.py:278-290); for chat vLLM's `_choice_has_streamed_output` (line 392)."""
    if backend == "openai":
        return True
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return False
    if (delta.get("content") or delta.get("reasoning") or delta.get("tool_calls")
            or delta.get("function_call")):
        return True
    return delta.get("content") == "" and "role" not in delta  # vLLM bench's rule


def _text_of(backend: str, choice: dict[str, Any]) -> str:
    if backend == "openai":
        return choice.get("text") or ""
    return (choice.get("delta") or {}).get("content") or ""


def count_output_tokens(outcome: RequestOutcome,
                        tokenizer: Callable[[str], int] | None = None) -> int:
    """A request's output tokens as `vllm bench serve` counts them (vLLM 0.33.0
    vllm/benchmarks/serve.py:636-651): the server's usage count; without one, the generated
    text's tokens under the served model's tokenizer (`tokenizer(text)` -> count), or 1 where
    there is none (no TPOT then). Never the chunks: "multiple output tokens may be bundled
    together" (serve.py:643-645), as MTP's 1 + accepted tokens a chunk are."""
    if outcome.output_len:
        return outcome.output_len
    return tokenizer(outcome.text) if tokenizer is not None else 1


async def send(session: aiohttp.ClientSession, base_url: str, backend: str,
               req: BenchRequest, sampling: Sampling) -> RequestOutcome:
    """Stream one request; never raises for server or connection failures (ok=False)."""
    out = RequestOutcome(input_len=req.input_len)
    payload = build_payload(backend, req, sampling)
    out.start = last = time.perf_counter()
    chunks = 0
    usage_out: int | None = None
    try:
        async with session.post(base_url + BACKENDS[backend], json=payload) as resp:
            if resp.status != 200:
                out.error = f"HTTP {resp.status}: {(await resp.text())[:200]}"
                return out
            buf = b""
            async for data in resp.content.iter_any():
                buf += data
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    line = raw.strip()
                    if not line.startswith(b"data:"):
                        continue  # blank separators and ": ping" comments
                    body = line[5:].strip()
                    if body == b"[DONE]":
                        continue
                    now = time.perf_counter()
                    msg = json.loads(body)
                    choices = msg.get("choices")
                    if choices and _has_output(backend, choices[0]):
                        if chunks == 0:
                            out.first_token = now
                        else:
                            out.itl.append(now - last)
                        chunks += 1
                        last = now
                        out.text += _text_of(backend, choices[0])
                    elif usage := msg.get("usage"):
                        out.spec_decode = msg.get("spec_decode")
                        usage_out = usage.get("completion_tokens")
                        if usage.get("prompt_tokens") is not None:
                            out.input_len = int(usage["prompt_tokens"])
    except Exception as e:  # connection reset, timeout, malformed JSON: a failed request
        out.error = f"{type(e).__name__}: {e}"
        return out
    if chunks == 0:
        out.error = "no output chunk received"
        return out
    out.end = last
    out.output_len = int(usage_out or 0)  # 0: count_output_tokens decides
    out.ok = True
    return out
