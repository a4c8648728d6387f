"""A vLLM-like continuous-batching scheduler: decoding requests first (k+1 tokens each), then
prompt chunks of running requests, then new requests while fewer than `max_num_seqs` run, all
within `max_num_batched_tokens` per step; chunked prefill splits prompts across steps.

The scheduler's choices do not depend on how many drafts a step accepts, only on which requests
run, wait and still prefill. So until a request finishes or a new one arrives, the steps ahead
are known: `lookahead` plans them (the steps holding prompt chunks, then the decode-only step
that repeats), and `commit` applies the ones the simulator ran.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from mtpsim.sim.entities import RequestTable


@dataclass(slots=True)
class Plan:
    """What one step runs: decoding request ids, (id, start, tokens) prompt chunks, and the
    waiting requests it admits (their first chunk is among `chunks`)."""

    decodes: list[int] = field(default_factory=list)
    chunks: list[tuple[int, int, int]] = field(default_factory=list)
    admitted: list[int] = field(default_factory=list)


@dataclass(slots=True)
class Lookahead:
    """The next steps if no request finishes or arrives: `steps` hold prompt chunks; then
    `steady` (decode-only, or None if the limit came first) repeats unchanged. `ids`: every
    request running in any of them, in admission order."""

    steps: list[Plan]
    steady: Plan | None
    ids: list[int]


class Scheduler:
    """Holds the waiting queue, the running set (admission order) and which running requests
    still prefill (id -> prompt tokens prefilled)."""

    def __init__(self, reqs: RequestTable, max_num_seqs: int, max_num_batched_tokens: int,
                 chunked_prefill: bool, k: int) -> None:
        self.reqs = reqs
        self.max_num_seqs = max_num_seqs
        self.budget = max_num_batched_tokens
        self.chunked = chunked_prefill
        self.k = k
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.prefilling: dict[int, int] = {}

    def add(self, rid: int) -> None:
        self.waiting.append(rid)

    def can_admit(self) -> bool:
        return bool(self.waiting) and len(self.running) < self.max_num_seqs

    def lookahead(self, limit: int) -> Lookahead:
        """Plan up to `limit` steps with prompt chunks, and the decode-only step after them."""
        running, prefilling = list(self.running), dict(self.prefilling)
        steps: list[Plan] = []
        pos = 0
        while len(steps) < limit:
            plan, pos = self._plan(running, prefilling, pos)
            if not plan.chunks:
                return Lookahead(steps, plan, running)
            steps.append(plan)
        return Lookahead(steps, None, running)

    def plan(self) -> Plan:
        """The next step's batch, committed (one step of `lookahead`)."""
        ahead = self.lookahead(1)
        plan = ahead.steps[0] if ahead.steps else ahead.steady
        assert plan is not None
        self.commit([plan])
        return plan

    def commit(self, plans: list[Plan]) -> None:
        """Apply steps that ran: admissions and prefill progress."""
        for plan in plans:
            for rid in plan.admitted:
                assert self.waiting[0] == rid
                self.waiting.popleft()
                self.running.append(rid)
                self.prefilling[rid] = 0
            for rid, _, n in plan.chunks:
                self.reqs.prefilled[rid] += n
                done = self.prefilling[rid] + n
                if done >= self.reqs.input_len[rid]:
                    del self.prefilling[rid]
                else:
                    self.prefilling[rid] = done

    def finish(self, done: set[int]) -> None:
        self.running = [r for r in self.running if r not in done]

    # ---- one step on a copy of the state ------------------------------------------------------
    def _plan(self, running: list[int], prefilling: dict[int, int], pos: int) -> tuple[Plan, int]:
        """One step's plan; advances `running`, `prefilling` and the waiting position `pos` as
        if it ran."""
        plan, k1 = Plan(), self.k + 1
        decodes = [r for r in running if r not in prefilling] if prefilling else running
        plan.decodes = decodes[:self.budget // k1]
        budget = self.budget - k1 * len(plan.decodes)
        for rid, done in list(prefilling.items()):
            budget -= self._chunk(plan, rid, done, budget, prefilling)
        while pos < len(self.waiting) and len(running) < self.max_num_seqs and budget > 0:
            rid = self.waiting[pos]
            taken = self._chunk(plan, rid, 0, budget, prefilling)
            if not taken:
                break
            budget -= taken
            pos += 1
            running.append(rid)
            plan.admitted.append(rid)
        return plan, pos

    def _chunk(self, plan: Plan, rid: int, start: int, budget: int,
               prefilling: dict[int, int]) -> int:
        left = int(self.reqs.input_len[rid]) - start
        n = min(left, budget) if self.chunked else (left if left <= budget else 0)
        if n > 0:
            plan.chunks.append((rid, start, n))
            if n == left:
                prefilling.pop(rid, None)
            else:
                prefilling[rid] = start + n
        return n
