"""Each request's decode steps, drawn before the schedule is known.

When every running request verifies at every step (the token budget covers k+1 tokens for
`max_num_seqs` requests), how many tokens a request gains at its j-th decode step depends on
its own draws and context only, not on when it runs or beside whom. So its whole output can be
drawn first: in blocks of `block` decode steps, the acceptance read at the context the request
has at the block's start (as a bulk of steps reads it at its start). Requests are drawn in
groups of `GROUP`, each group from its own child stream, and every request of a group draws a
block whether or not it still needs one: request r sees the same uniforms under every policy
(common random numbers) however many blocks the others need.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.models.acceptance import draw_accepted

GROUP = 512  # requests per stream (keeps the arrays of one draw in cache)


@dataclass(slots=True)
class Block:
    """Decode steps [index * size, (index + 1) * size) of the requests `rows`."""

    rows: slice
    index: int
    gen_start: np.ndarray  # [m] output tokens before the block (1 = the prefill's)
    tokens: np.ndarray  # [m, size] tokens per decode step (1 + accepted)

    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        """(decode step index j [m, size], output tokens before step j [m, size])."""
        size = self.tokens.shape[1]
        before = np.cumsum(self.tokens, axis=1, dtype=float) - self.tokens
        j = self.index * size + np.arange(size)
        return np.broadcast_to(j, before.shape), self.gen_start[:, None] + before


@dataclass(slots=True)
class Decoding:
    """Per request: `steps` decode steps after its prompt (0 if one output token), accepted
    drafts over them, and the drawn blocks."""

    steps: np.ndarray  # [n] int
    accepted: np.ndarray  # [n]
    accepted_per_pos: np.ndarray  # [n, k]
    blocks: list[Block]
    expected: np.ndarray | None = None  # [n] the model's mean accepted drafts over those steps


def draw_decoding(acc: Any, rng: np.random.Generator | None, input_len: np.ndarray,
                  output_len: np.ndarray, shift: np.ndarray, k: int, size: int) -> Decoding:
    """Draw every request's decode steps (`rng` None: expected-value mode, no draws)."""
    n = input_len.size
    out = Decoding(np.zeros(n, np.int64), np.zeros(n), np.zeros((n, k)), [], np.zeros(n))
    groups = range(0, n, GROUP)
    streams = rng.spawn(len(groups)) if rng is not None else [None] * len(groups)
    for lo, stream in zip(groups, streams, strict=True):
        _draw_group(acc, stream, slice(lo, min(lo + GROUP, n)), input_len, output_len, shift,
                    k, size, out)
    return out


def _draw_group(acc: Any, rng: np.random.Generator | None, rows: slice, input_len: np.ndarray,
                output_len: np.ndarray, shift: np.ndarray, k: int, size: int,
                out: Decoding) -> None:
    inp, m = input_len[rows], input_len[rows].size
    need = output_len[rows].astype(float) - 1.0  # tokens after the prefill's
    gen = np.ones(m)
    open_ = need > 1e-9
    steps, accepted, per_pos = out.steps[rows], out.accepted[rows], out.accepted_per_pos[rows]
    expected = out.expected[rows]
    b = 0
    while open_.any():
        marg = acc.marginal(inp + gen, shift[rows])  # [m, k]
        if rng is None:
            a = np.broadcast_to(marg.sum(axis=1)[:, None], (m, size))
            tok = 1.0 + a
        else:
            a = draw_accepted(rng, marg, size)  # [m, size] int8
            tok = 1 + a
        cum = np.cumsum(tok, axis=1, dtype=float)
        reach = cum >= (need - (gen - 1.0))[:, None] - 1e-9
        hit = reach.any(axis=1)
        used = np.where(hit, reach.argmax(axis=1) + 1, size) * open_  # steps taken in block
        steps += used
        expected += used * marg.sum(axis=1)
        if rng is None:
            accepted += used * marg.sum(axis=1)
            per_pos += used[:, None] * marg
        else:
            am = a * (np.arange(size)[None, :] < used[:, None])
            accepted += am.sum(axis=1)
            for i in range(k):
                per_pos[:, i] += (am > i).sum(axis=1)
        out.blocks.append(Block(rows, b, gen.copy(), tok))
        gen = gen + np.where(used > 0, cum[np.arange(m), np.maximum(used, 1) - 1], 0.0)
        open_ &= ~hit
        b += 1
