"""Request state as numpy arrays (one slot per request), so the simulator can advance many
requests at once; plus the workload's length draws (arrival times: mtpsim.arrivals).

Engine events are stamped with positions (steps run when they happened, mtpsim.sim.clock) and
turned into seconds at the end; inter-token latencies likewise, as runs between two positions."""

from __future__ import annotations

from dataclasses import field

import numpy as np

from mtpsim.dataclass import dataclass


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


MIN_LEN = 4  # vllm bench serve's is_valid_sequence: min_len


def draw_filtered(rng: np.random.Generator, n: int, means: tuple[int, int],
                  spreads: tuple[float, float], max_total: int) -> tuple[np.ndarray, np.ndarray]:
    """Lognormal (prompt, output) pairs as `vllm bench serve` keeps them from a dataset
    (vLLM 0.33.0 `benchmarks/datasets/datasets.py` `is_valid_sequence`, defaults for ShareGPT:
    both >= 4, prompt <= 1024, prompt + output <= 2048; here prompt <= max_total / 2): draws are
    taken in order until n pairs pass, the locations shifted so that the kept pairs' means are
    `means` (the figures a source reports are those of the kept pairs)."""
    z = rng.standard_normal((2, 8 * n))
    sig = np.array(spreads, float)[:, None]
    target = np.log(np.array(means, float))
    shift = np.zeros(2)
    for _ in range(8):  # fixed point on the log-means of the kept pairs
        x = np.rint(np.exp((target + shift)[:, None] - sig**2 / 2 + sig * z))
        ok = ((x >= MIN_LEN).all(axis=0) & (x[0] <= max_total // 2) & (x.sum(axis=0) <= max_total))
        kept = x[:, ok][:, :n]
        if kept.shape[1] < n:
            raise ValueError(f"fewer than {n} of {z.shape[1]} drawn pairs pass the filter")
        shift += target - np.log(kept.mean(axis=1))
    return kept[0].astype(np.int64), kept[1].astype(np.int64)


@dataclass(slots=True)
class RequestTable:
    """Per-request state; `generated` counts output tokens (float in expected-value mode)."""

    input_len: np.ndarray  # [n] int
    output_len: np.ndarray  # [n] int
    k: int
    send_at: np.ndarray = field(init=False)  # the client's clock (seconds or positions)
    first_token_at: np.ndarray = field(init=False)  # positions; NaN: not yet
    finish_at: np.ndarray = field(init=False)
    last_token_at: np.ndarray = field(init=False)
    prefilled: np.ndarray = field(init=False)
    generated: np.ndarray = field(init=False)
    drafts: np.ndarray = field(init=False)
    accepted: np.ndarray = field(init=False)
    accepted_per_pos: np.ndarray = field(init=False)  # [n, k]
    expected_accepted: np.ndarray = field(init=False)  # the acceptance model's mean, given the path
    recompute: np.ndarray = field(init=False)  # output tokens to prefill again after a preemption
    preemptions: np.ndarray = field(init=False)
    admitted_at: np.ndarray = field(init=False)  # position of the first admission; NaN: not yet
    _itl: list[tuple[np.ndarray, ...]] = field(init=False)

    def __post_init__(self) -> None:
        n = self.input_len.size
        nan = np.full(n, np.nan)
        self.send_at, self.first_token_at, self.finish_at = nan.copy(), nan.copy(), nan.copy()
        self.last_token_at = nan.copy()
        self.prefilled = np.zeros(n, dtype=np.int64)
        self.generated = np.zeros(n)
        self.drafts = np.zeros(n, dtype=np.int64)
        self.accepted = np.zeros(n)
        self.accepted_per_pos = np.zeros((n, self.k))
        self.expected_accepted = np.zeros(n)
        self.recompute = np.zeros(n, dtype=np.int64)
        self.preemptions = np.zeros(n, dtype=np.int64)
        self.admitted_at = nan.copy()
        self._itl = []

    def __len__(self) -> int:
        return int(self.input_len.size)

    def prefill_len(self, rid: int) -> int:
        """Tokens its prefill computes: the prompt, plus the output so far after a preemption
        (vLLM V1 recomputes a preempted request from scratch)."""
        return int(self.input_len[rid] + self.recompute[rid])

    def context(self, ids: np.ndarray) -> np.ndarray:
        """Keys up to the last accepted token: prompt plus output so far."""
        return self.input_len[ids] + self.generated[ids]

    def book_itl(self, ids: np.ndarray, start: np.ndarray, stop: np.ndarray,
                 count: np.ndarray) -> None:
        """Inter-token latencies, run-length: request ids[j] made `count[j]` tokens evenly
        between positions start[j] and stop[j] (runs of one request in time order; zero counts
        are dropped)."""
        keep = count > 0
        self._itl.append((ids[keep], start[keep].astype(np.int64), stop[keep].astype(np.int64),
                          count[keep]))

    def itl_flat(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every booked run as (request id, gap s, count), in booking order."""
        if not self._itl:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
        ids, start, stop, cnt = (np.concatenate(c) for c in zip(*self._itl, strict=True))
        return ids, (times[stop] - times[start]) / np.maximum(cnt, 1), cnt

    def itl_runs(self, times: np.ndarray) -> list[tuple[list[float], list[int]]]:
        """Per request: (gaps s, counts) in time order, equal neighbouring gaps merged; `times`:
        seconds at each position."""
        n = len(self)
        ids, gap, cnt = self.itl_flat(times)
        if not ids.size:
            return [([], []) for _ in range(n)]
        order = np.argsort(ids, kind="stable")
        ids, gap, cnt = ids[order], gap[order], cnt[order]
        new = np.ones(ids.size, bool)
        new[1:] = (ids[1:] != ids[:-1]) | (gap[1:] != gap[:-1])
        starts = np.flatnonzero(new)
        ids, gap, cnt = ids[starts], gap[starts], np.add.reduceat(cnt, starts)
        bounds = np.searchsorted(ids, np.arange(n + 1))
        gaps, counts = gap.tolist(), cnt.tolist()
        return [(gaps[a:b], counts[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
