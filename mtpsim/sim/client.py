"""The benchmark client: sends requests at their intended times, at most `max_concurrency` in
flight (vLLM bench's semaphore: a request waits for a free slot and is timed from when it is
actually sent)."""

from __future__ import annotations

import math

import numpy as np


class Client:
    """Arrival source. `send_until(t)` returns the requests sent by time t."""

    def __init__(self, intended_s: np.ndarray, max_concurrency: int | None) -> None:
        self.intended_s = intended_s
        self.limit = max_concurrency or len(intended_s)
        self.next_id = 0
        self.in_flight = 0
        self.slot_free_s = 0.0  # when the latest slot was freed

    def next_send_s(self) -> float:
        """Time of the next send, inf if none is possible before a request finishes."""
        if self.next_id >= len(self.intended_s) or self.in_flight >= self.limit:
            return math.inf
        return max(float(self.intended_s[self.next_id]), self.slot_free_s)

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
