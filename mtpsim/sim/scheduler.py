"""A vLLM-like continuous-batching scheduler: decoding requests first (k+1 tokens each), then
prompt chunks of running requests, then new requests while fewer than `max_num_seqs` run, all
within `max_num_batched_tokens` per step; chunked prefill splits prompts across steps."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from mtpsim.sim.entities import RequestTable


@dataclass(slots=True)
class Plan:
    """What one step runs: decoding request ids and (id, start, tokens) prompt chunks."""

    decodes: list[int] = field(default_factory=list)
    chunks: list[tuple[int, int, int]] = field(default_factory=list)


class Scheduler:
    """Holds the waiting queue and the running set (admission order)."""

    def __init__(self, reqs: RequestTable, max_num_seqs: int, max_num_batched_tokens: int,
                 chunked_prefill: bool, k: int) -> None:
        self.reqs = reqs
        self.max_num_seqs = max_num_seqs
        self.budget = max_num_batched_tokens
        self.chunked = chunked_prefill
        self.k = k
        self.waiting: deque[int] = deque()
        self.running: list[int] = []

    def add(self, rid: int) -> None:
        self.waiting.append(rid)

    def can_admit(self) -> bool:
        return bool(self.waiting) and len(self.running) < self.max_num_seqs

    def plan(self) -> Plan:
        """The next step's batch; admits waiting requests as their first chunk fits."""
        reqs, plan = self.reqs, Plan()
        budget = self.budget
        prefilling = []
        for rid in self.running:
            if reqs.prefilled[rid] < reqs.input_len[rid]:
                prefilling.append(rid)
            elif budget >= self.k + 1:
                plan.decodes.append(rid)
                budget -= self.k + 1
        for rid in prefilling:
            budget -= self._chunk(plan, rid, budget)
        while self.can_admit() and budget > 0:
            rid = self.waiting[0]
            taken = self._chunk(plan, rid, budget)
            if not taken:
                break
            budget -= taken
            self.waiting.popleft()
            self.running.append(rid)
        return plan

    def _chunk(self, plan: Plan, rid: int, budget: int) -> int:
        start = int(self.reqs.prefilled[rid])
        left = int(self.reqs.input_len[rid]) - start
        n = min(left, budget) if self.chunked else (left if left <= budget else 0)
        if n > 0:
            plan.chunks.append((rid, start, n))
        return n

    def finish(self, done: set[int]) -> None:
        self.running = [r for r in self.running if r not in done]
