"""When a benchmark client sends each request: vLLM 0.33.0's `vllm bench serve` rule, used by
the simulator, the reference runner and mtpsim's benchmark client alike.

Schedule (vLLM `benchmarks/serve.py: get_request`): every request, the first included, waits a
gap drawn from Gamma(shape = burstiness, scale = 1 / (rate * burstiness)) (Poisson at
burstiness 1; exactly 1 / rate at burstiness inf); the cumulative delays are then rescaled so
that the last request goes out at exactly n / rate. Rate inf sends everything at t = 0.

Slots (vLLM's `asyncio.Semaphore(max_concurrency)`): requests take slots in order; a request
whose time has come while every slot is busy waits, and is sent (and timed: its arrival, TTFT
and latency start) when a slot frees, not at its scheduled time.

The gaps come from their own random stream of the experiment's seed (child 2 of
`SeedSequence(seed)`; the simulator's workload and acceptance streams are children 0 and 1), so
the same seed gives the same schedule in every mode.
"""

from __future__ import annotations

import math

import numpy as np

ARRIVAL_STREAM = 2  # spawn key of the arrivals' stream under SeedSequence(seed)


def arrival_gaps(n: int, request_rate: float, burstiness: float, seed: int) -> np.ndarray:
    """vLLM's per-request delays before the cumulative sum (the first request's included)."""
    if math.isinf(request_rate):
        return np.zeros(n)
    if math.isinf(burstiness):
        return np.full(n, 1.0 / request_rate)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(ARRIVAL_STREAM,)))
    return rng.gamma(burstiness, 1.0 / (request_rate * burstiness), n)


def send_offsets(n: int, request_rate: float, burstiness: float, seed: int) -> np.ndarray:
    """Scheduled send times (s from the start): cumulative gaps rescaled so that the last is at
    n / rate, as vLLM does to keep throughput stable across seeds."""
    delays = np.cumsum(arrival_gaps(n, request_rate, burstiness, seed))
    if n == 0 or delays[-1] == 0:
        return delays
    return delays * (n / request_rate / delays[-1])


class Client:
    """The slot rule in simulated or engine time: `send_until(t)` sends, in order, every request
    whose scheduled time has come while a slot is free; `on_finish(t)` frees slots."""

    def __init__(self, scheduled_s: np.ndarray, max_concurrency: int | None) -> None:
        self.intended_s = scheduled_s
        self.limit = max_concurrency or len(scheduled_s)
        self.next_id = 0
        self.in_flight = 0
        self.slot_free_s = 0.0  # when the latest slot was freed

    def next_send_s(self) -> float:
        """Time of the next send, inf if none is possible before a request finishes."""
        if self.next_id >= len(self.intended_s) or self.in_flight >= self.limit:
            return math.inf
        return sent_at(float(self.intended_s[self.next_id]), self.slot_free_s)

    def send_until(self, t: float) -> list[tuple[int, float]]:
        """(request id, send time) of every request sent at or before t."""
        sent = []
        while (s := self.next_send_s()) <= t:
            sent.append((self.next_id, s))
            self.next_id += 1
            self.in_flight += 1
        return sent

    def on_finish(self, t: float, count: int = 1) -> None:
        self.in_flight -= count
        self.slot_free_s = t


def sent_at(scheduled_s: float, slot_free_s: float) -> float:
    """When a request is sent and timed from: its scheduled time, or when its slot freed."""
    return max(scheduled_s, slot_free_s)
