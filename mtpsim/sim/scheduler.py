"""A vLLM-like continuous-batching scheduler: decoding requests first (k+1 tokens each), then
prompt chunks of running requests, then new requests while fewer than `max_num_seqs` run, all
within `max_num_batched_tokens` per step; chunked prefill splits prompts across steps.

This is vLLM 0.33.0 `v1/core/sched/scheduler.py` `Scheduler.schedule` (~line 699): the RUNNING
loop (~line 795) walks `self.running` in admission order, and the WAITING loop (~line 1050)
admits FCFS after it. Running requests that still prefill were admitted after every decoding one
(a prompt takes the whole leftover budget until its last chunk, so nothing is admitted behind it
before then), so "decodes, then prompt chunks" is the running order.

With a KV cache (`KvCache`, the vLLM paged cache of `v1/core/kv_cache_manager.py`) each scheduled
request must hold blocks for its computed tokens, the tokens it runs and k lookahead slots
(`KVCacheManager.allocate_slots`, ~line 380). When they are not free the running loop preempts
the most recently admitted request (`self.running.pop()`, ~line 970; `_preempt_request`
~line 1799: its blocks are freed, `num_computed_tokens = 0`, it goes back to the FRONT of the
waiting queue and later recomputes its prompt and output so far), until the request fits or is
itself the victim. A step that preempted admits nothing (~line 1050: `if not preempted_reqs`);
admission needs free blocks for the request's whole sequence
(`scheduler_reserve_full_isl`, default on: `allocate_slots(full_sequence_must_fit=True)`,
~line 1449), and the first that does not fit stops admission (FCFS, `break`).

The scheduler's choices do not depend on how many drafts a step accepts, only on which requests
run, wait and still prefill, except through the KV cache. So until a request finishes or a new
one arrives, the steps ahead are known: `lookahead` plans them (the steps holding prompt chunks,
then the decode-only step that repeats), and `commit` applies the ones the simulator ran. With a
KV cache, `make_room` first applies the exact allocation and preemption of the next step; later
steps admit only tentatively (unless admission is already blocked: free blocks only shrink
until a request finishes or is preempted, and both end the run), and the simulator cuts the run
at the first step whose allocation or admission the drawn tokens would not allow.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import field

from mtpsim.dataclass import dataclass
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


@dataclass(slots=True)
class KvCache:
    """One engine's paged KV cache: `blocks` of `block_size` tokens; `held`: blocks per running
    request (its allocation at the last step it ran); `lookahead`: k draft slots."""

    blocks: int
    block_size: int
    lookahead: int
    held: dict[int, int] = field(default_factory=dict)
    free_now: int = 0  # free blocks after the next step's running loop (set by make_room)
    preempted_now: bool = False  # the next step preempted: it admits nothing
    peak: int = 0  # most blocks held at once

    def need(self, tokens: float) -> int:
        return math.ceil(tokens / self.block_size)

    def used(self) -> int:
        return sum(self.held.values())


class Scheduler:
    """Holds the waiting queue, the running set (admission order) and which running requests
    still prefill (id -> prompt tokens prefilled)."""

    def __init__(self, reqs: RequestTable, max_num_seqs: int, max_num_batched_tokens: int,
                 chunked_prefill: bool, k: int, kv: KvCache | None = None) -> None:
        self.reqs = reqs
        self.max_num_seqs = max_num_seqs
        self.budget = max_num_batched_tokens
        self.chunked = chunked_prefill
        self.k = k
        self.kv = kv
        self.waiting: deque[int] = deque()
        self.running: list[int] = []
        self.prefilling: dict[int, int] = {}
        self.num_preemptions = 0
        self._kv_blocked = False  # admission refused on KV blocks: nothing more until an event
        # tokens each request's prefill computes (RequestTable.prefill_len), as plain ints: the
        # planner reads them ~200,000 times in an --uncertainty 64 run; _preempt updates them
        self._plen: list[int] = (reqs.input_len + reqs.recompute).astype(int).tolist()
        self._input: list[int] = reqs.input_len.astype(int).tolist()

    def add(self, rid: int) -> None:
        self.waiting.append(rid)

    def can_admit(self) -> bool:
        return bool(self.waiting) and len(self.running) < self.max_num_seqs

    def lookahead(self, limit: int) -> Lookahead:
        """Plan up to `limit` steps with prompt chunks, and the decode-only step after them."""
        kv_free: int | None = None
        self._kv_blocked = False
        if self.kv is not None:
            self.make_room()
            kv_free = -2 if self.kv.preempted_now else self.kv.free_now
        running, prefilling = list(self.running), dict(self.prefilling)
        steps: list[Plan] = []
        pos = 0
        while len(steps) < limit:
            plan, pos = self._plan(running, prefilling, pos, kv_free)
            if self.kv is not None:
                # after the next step admission is tentative (the simulator checks it on the
                # drawn tokens) unless refused for blocks, which lasts until the next event (a
                # preemption, unlike a refusal, frees blocks its victim may be readmitted into)
                kv_free = -1 if self._kv_blocked else None
            if not plan.chunks:
                if not steps and self.kv is not None and self.kv.preempted_now and self.waiting:
                    # a decode-only step that preempted does not repeat: the step after it
                    # may readmit the victim
                    return Lookahead([plan], None, running)
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
                if done >= self._plen[rid]:
                    del self.prefilling[rid]
                else:
                    self.prefilling[rid] = done

    def finish(self, done: set[int]) -> None:
        self.running = [r for r in self.running if r not in done]
        if self.kv is not None:
            for rid in done:
                self.kv.held.pop(rid, None)

    # ---- the KV cache at the next step -------------------------------------------------------
    def make_room(self) -> None:
        """The next step's running loop against the KV cache: each scheduled request in order
        grows to the blocks it needs; when they are not free the last admitted running request
        is preempted (vLLM `Scheduler.schedule`, ~line 900), until it fits or is the victim.
        Sets `kv.free_now` (blocks free for admission) and `kv.preempted_now`."""
        assert self.kv is not None
        self.kv.preempted_now = False
        while self._running_loop():  # a preemption frees budget too: replan the step
            pass

    def _running_loop(self) -> bool:
        """One pass of the running loop; True if it preempted (the pass stops there)."""
        kv, reqs, k1 = self.kv, self.reqs, self.k + 1
        assert kv is not None
        free = kv.blocks - kv.used()
        budget = self.budget
        decodes = [r for r in self.running if r not in self.prefilling]
        order = decodes[:budget // k1] + list(self.prefilling)
        budget -= k1 * min(len(decodes), budget // k1)
        for rid in order:
            if rid not in self.prefilling:
                tokens = float(reqs.input_len[rid] + reqs.generated[rid]) + 2 * self.k
            else:
                start = self.prefilling[rid]
                n = self._chunk_size(rid, start, budget)
                if n == 0:
                    continue
                budget -= n
                tokens = start + n + self.k
            grow = kv.need(tokens) - kv.held.get(rid, 0)
            if grow > free:
                while grow > free:
                    victim = self.running[-1]
                    free += self._preempt(victim)
                    if victim == rid:
                        break
                return True
            free -= max(grow, 0)
        kv.free_now = free
        return False

    def _preempt(self, rid: int) -> int:
        """vLLM `_preempt_request`: free its blocks, forget its computed tokens, put it at the
        front of the waiting queue; returns the blocks freed."""
        kv, reqs = self.kv, self.reqs
        assert kv is not None
        self.running.remove(rid)
        self.prefilling.pop(rid, None)
        self.waiting.appendleft(rid)
        reqs.recompute[rid] = int(round(float(reqs.generated[rid])))
        self._plen[rid] = self._input[rid] + int(reqs.recompute[rid])
        reqs.prefilled[rid] = 0
        reqs.preemptions[rid] += 1
        self.num_preemptions += 1
        kv.preempted_now = True
        return kv.held.pop(rid, 0)

    # ---- one step on a copy of the state ------------------------------------------------------
    def _plan(self, running: list[int], prefilling: dict[int, int], pos: int,
              kv_free: int | None) -> tuple[Plan, int]:
        """One step's plan; advances `running`, `prefilling` and the waiting position `pos` as
        if it ran. `kv_free`: blocks free for admission (None: no check; < 0: admit nothing)."""
        plan, k1 = Plan(), self.k + 1
        decodes = [r for r in running if r not in prefilling] if prefilling else running
        plan.decodes = decodes[:self.budget // k1]
        budget = self.budget - k1 * len(plan.decodes)
        for rid, done in list(prefilling.items()):
            budget -= self._chunk(plan, rid, done, budget, prefilling)
        while pos < len(self.waiting) and len(running) < self.max_num_seqs and budget > 0:
            rid = self.waiting[pos]
            if kv_free is not None:
                # the whole sequence must fit what is free, and so must the first chunk with
                # its lookahead slots (allocate_slots checks both, ~lines 546 and 585)
                first = self._chunk_size(rid, 0, budget)
                if kv_free == -2:  # the step preempted: it admits nothing, but is not blocked
                    break
                if kv_free < 0 or self.kv is None or (
                        max(self.kv.need(self._plen[rid]), self.kv.need(first + self.k))
                        > kv_free):
                    self._kv_blocked = self.kv is not None
                    break
            taken = self._chunk(plan, rid, 0, budget, prefilling)
            if not taken:
                break
            if kv_free is not None and self.kv is not None:
                kv_free -= self.kv.need(taken + self.k)
            budget -= taken
            pos += 1
            running.append(rid)
            plan.admitted.append(rid)
        return plan, pos

    def _chunk_size(self, rid: int, start: int, budget: int) -> int:
        plen = self._plen[rid]
        left = plen - start
        # a recomputation after a preemption may exceed a budget that held the prompt whole:
        # it is chunked even with chunked prefill off (vLLM then sizes the budget to the model)
        chunked = self.chunked or plen > self._input[rid]
        return min(left, budget) if chunked else (left if left <= budget else 0)

    def _chunk(self, plan: Plan, rid: int, start: int, budget: int,
               prefilling: dict[int, int]) -> int:
        plen = self._plen[rid]
        left = plen - start
        if self.chunked or plen > self._input[rid]:
            n = left if left < budget else budget
        else:
            n = left if left <= budget else 0
        if n > 0:
            plan.chunks.append((rid, start, n))
            if n == left:
                prefilling.pop(rid, None)
            else:
                prefilling[rid] = start + n
        return n
