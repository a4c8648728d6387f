"""Request state as numpy arrays (one slot per request), so the simulator can advance many
requests at once; plus the workload's length draws (arrival times: mtpsim.arrivals)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def draw_lengths(rng: np.random.Generator, n: int, mean: int, dist: str, spread: float) -> np.ndarray:
    """Token lengths: fixed, uniform in mean*(1 +- spread) (vLLM's range ratio), or lognormal
    with the given mean and log-sigma `spread`; at least 1."""
    if dist == "fixed" or spread == 0:
        return np.full(n, mean, dtype=np.int64)
    if dist == "uniform":
        lo, hi = round(mean * (1 - spread)), round(mean * (1 + spread))
        return np.maximum(rng.integers(lo, hi + 1, size=n), 1)
    x = rng.lognormal(np.log(mean) - spread**2 / 2, spread, size=n)
    return np.maximum(np.rint(x).astype(np.int64), 1)


@dataclass(slots=True)
class RequestTable:
    """Per-request state; `generated` counts output tokens (float in expected-value mode)."""

    input_len: np.ndarray  # [n] int
    output_len: np.ndarray  # [n] int
    k: int
    send_s: np.ndarray = field(init=False)
    first_token_s: np.ndarray = field(init=False)
    finish_s: np.ndarray = field(init=False)
    last_chunk_s: np.ndarray = field(init=False)
    prefilled: np.ndarray = field(init=False)
    generated: np.ndarray = field(init=False)
    drafts: np.ndarray = field(init=False)
    accepted: np.ndarray = field(init=False)
    accepted_per_pos: np.ndarray = field(init=False)  # [n, k]
    itl_s: list[list[float]] = field(init=False)
    itl_count: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        n = self.input_len.size
        nan = np.full(n, np.nan)
        self.send_s, self.first_token_s, self.finish_s = nan.copy(), nan.copy(), nan.copy()
        self.last_chunk_s = nan.copy()
        self.prefilled = np.zeros(n, dtype=np.int64)
        self.generated = np.zeros(n)
        self.drafts = np.zeros(n, dtype=np.int64)
        self.accepted = np.zeros(n)
        self.accepted_per_pos = np.zeros((n, self.k))
        self.itl_s = [[] for _ in range(n)]
        self.itl_count = [[] for _ in range(n)]

    def __len__(self) -> int:
        return int(self.input_len.size)

    def context(self, ids: np.ndarray) -> np.ndarray:
        """Keys up to the last accepted token: prompt plus output so far."""
        return self.input_len[ids] + self.generated[ids]

    def add_itl(self, rid: int, gap_s: float, count: int = 1) -> None:
        if count <= 0:
            return
        runs, counts = self.itl_s[rid], self.itl_count[rid]
        if runs and runs[-1] == gap_s:
            counts[-1] += count
        else:
            runs.append(gap_s)
            counts.append(count)
