"""What both serving loops (stepped and planned) share about advancing requests in bulk."""

from __future__ import annotations

import numpy as np

from mtpsim.dataclass import dataclass

MAX_BULK_STEPS = 256  # caps context drift within one bulk (acceptance is read at its start)


def sum_min(a: int, b: int, cap: int) -> float:
    """sum_{p=a}^{b} min(p, cap) for 1 <= a <= b."""
    if b <= cap:
        return (a + b) * (b - a + 1) / 2
    if a > cap:
        return cap * (b - a + 1)
    return (a + cap) * (cap - a + 1) / 2 + cap * (b - cap)


@dataclass(slots=True)
class Bulk:
    """One bulk advance of the stepped loop: its requests (rows, in the lookahead's order), the
    steps planned for them and, once drawn, their tokens ([requests, steps] arrays)."""

    ids: np.ndarray  # [b] request ids
    row: dict[int, int]  # request id -> row
    trans: list  # the scheduler's Plans of the steps with prompt chunks, in order
    started: np.ndarray  # [b] decoding at the start (else its prompt completes in the run)
    marg: np.ndarray  # [b, k] marginal acceptance, read at the run's start
    plen: np.ndarray  # [b] tokens each prefill (or recomputation) computes
    dec: np.ndarray  # [b, steps] the request decodes at the step
    comp: np.ndarray  # [b] step at which its prompt completes (steps: not in this run)
    chunks: np.ndarray  # [4, steps] prompt tokens, keys, pairs, reads per step
    pre_tok: np.ndarray | None  # [b, steps] KV slots a prompt chunk needs (with a KV cache)
    accepted: np.ndarray | None = None  # [b, steps] drawn accepted drafts (None: expected mode)
    tokens: np.ndarray | None = None  # [b, steps] output tokens of the step
    gen_after: np.ndarray | None = None  # [b, steps] output tokens after the step

    @property
    def steps(self) -> int:
        return self.dec.shape[1]

    def cut(self, n: int) -> None:
        """Keep the first `n` steps (the drawn acceptances stay whole)."""
        self.dec, self.tokens, self.gen_after, self.chunks = (
            self.dec[:, :n], self.tokens[:, :n], self.gen_after[:, :n], self.chunks[:, :n])
