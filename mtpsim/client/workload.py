"""The requests a benchmark sends: random token-id prompts of given lengths, or prepared
SPEED-Bench files (`<subset>.jsonl`, one JSON object per line with a `messages` column and an
optional `category`) read from a local path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError
from mtpsim.inputs import MiB, loads_json, read_text
from mtpsim.sim.entities import draw_lengths

# Token ids >= this are used for random prompts: id 0 is the reference engine's EOS.
FIRST_RANDOM_ID = 1


@dataclass(frozen=True, slots=True)
class BenchRequest:
    """One request: a completions prompt (token ids or text) or chat messages."""

    output_len: int  # max_tokens
    prompt: list[int] | str | None = None
    messages: list[dict[str, str]] | None = None
    input_len: int = 0  # known for token-id prompts; otherwise taken from the server's usage
    seed: int | None = None  # per-request sampling seed (same draws under every policy)

    def payload(self, backend: str) -> dict[str, Any]:
        extra: dict[str, Any] = {} if self.seed is None else {"seed": self.seed}
        if backend == "openai-chat":
            messages = self.messages or [{"role": "user", "content": _as_text(self.prompt)}]
            return {"messages": messages, **extra}
        if self.prompt is None:
            raise UserError(None, "workload", "a chat (messages) workload needs the openai-chat "
                            "backend")
        return {"prompt": self.prompt, **extra}


def _as_text(prompt: list[int] | str | None) -> str:
    if isinstance(prompt, str):
        return prompt
    return bytes(32 + (t - 32) % 95 for t in prompt or []).decode("ascii")  # printable ASCII


def random_requests(num_prompts: int, input_len: int, output_len: int, *, vocab_size: int,
                    seed: int = 0, input_dist: str = "fixed", input_spread: float = 0.0,
                    output_dist: str = "fixed", output_spread: float = 0.0,
                    backend: str = "openai") -> list[BenchRequest]:
    """Prompts of uniformly random token ids in [1, vocab_size) (sent as id lists, so lengths
    are exact on any server); for the chat backend, printable ASCII of the same length."""
    if vocab_size <= FIRST_RANDOM_ID + 1:
        raise UserError(None, "model.vocab_size", f"expected > 2, got {vocab_size}")
    rng = np.random.default_rng(seed)
    ins = draw_lengths(rng, num_prompts, input_len, input_dist, input_spread)
    outs = draw_lengths(rng, num_prompts, output_len, output_dist, output_spread)
    reqs = []
    for n_in, n_out in zip(ins.tolist(), outs.tolist(), strict=True):
        ids = rng.integers(FIRST_RANDOM_ID, vocab_size, size=n_in).tolist()
        if backend == "openai-chat":
            reqs.append(BenchRequest(n_out, prompt=_as_text(ids)))
        else:
            reqs.append(BenchRequest(n_out, prompt=ids, input_len=n_in))
    return reqs


def speed_bench_path(dataset_path: str | Path, subset: str) -> Path:
    """`<dataset_path>/<subset>.jsonl` (vLLM's layout), or `dataset_path` itself if a file."""
    path = Path(dataset_path)
    return path if path.is_file() else path / f"{subset}.jsonl"


def speed_bench_requests(path: str | Path, num_prompts: int, output_len: int, *,
                         category: str = "", seed: int = 0, max_input_len: int = 0,
                         tokenizer: Any = None) -> list[BenchRequest]:
    """Chat requests from a SPEED-Bench `<subset>.jsonl`, as vLLM 0.33.0's `SpeedBench` reads
    it: the first message's content becomes one user turn, rows are filtered by `category`,
    shuffled with `seed` and reused in order when fewer than `num_prompts` remain.
    `max_input_len` > 0 cuts each prompt to that many tokens of `tokenizer` (a Hugging Face
    tokenizer of the served model; the chat template adds its own few tokens)."""
    path = Path(path)
    lines = read_text(path, UserError, "SPEED-Bench file", 2048 * MiB).splitlines()
    prompts = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = loads_json(line, path, UserError, f"line {i}")
        messages = row.get("messages") if isinstance(row, dict) else None
        if not (isinstance(messages, list) and messages and isinstance(messages[0], dict)
                and isinstance(messages[0].get("content"), str)):
            raise UserError(path, f"line {i}", "expected a `messages` list whose first item "
                            "has a string `content`")
        if category and row.get("category") != category:
            continue
        prompts.append(messages[0]["content"])
    if not prompts:
        what = f"category {category!r}" if category else "any row"
        raise UserError(path, "category" if category else None, f"no rows match {what}")
    if max_input_len:
        if tokenizer is None:
            raise UserError(None, "workload.max_input_len", "needs the served model's tokenizer")
        prompts = [tokenizer.decode(tokenizer.encode(p, add_special_tokens=False)[:max_input_len])
                   for p in prompts]
    order = np.random.default_rng(seed).permutation(len(prompts)).tolist()
    return [BenchRequest(output_len, messages=[{"role": "user",
                                                "content": prompts[order[i % len(prompts)]]}])
            for i in range(num_prompts)]
