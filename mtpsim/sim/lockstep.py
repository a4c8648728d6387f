"""Data-parallel ranks in lock-step: the other ranks' prompt chunks stall the simulated rank.

vLLM runs the `dp` engines of a DP + EP deployment in step with each other. Every MoE layer is a
collective over all ranks (the default `all2all_backend`, "allgather_reducescatter", gathers
every rank's tokens and reduce-scatters the outputs: vLLM 0.33.0
`distributed/device_communicators/all2all.py` `AgRsAll2AllManager`), an idle rank runs dummy
batches while any rank has work (`v1/engine/core.py` `DPEngineCoreProc`, `execute_dummy_batch`),
and before each forward the ranks all-reduce their token counts and pad to the largest
(`v1/worker/dp_utils.py` `coordinate_batch_across_dp`; vLLM 0.13.0 padded every step whenever
CUDA graphs were on, vLLM PR #34102 limited it to steps that replay graphs in February 2026). So
a step lasts as long as the slowest rank's: a rank that only decodes waits, layer by layer, for
a rank that prefills a prompt in the same step.

The simulator runs one rank (`Simulator`, every dp-th request). Where the send schedule is fixed
(no concurrency limit, sends in seconds), the other ranks' requests and when the engines see them
are known: each is prefilled whole in the first step that starts after it arrives (its rank has
room: the burst's ranks hold the same few hundred requests as the simulated one). `Lockstep`
prices such a step as the longer of the simulated rank's own step and the other rank's, which
is taken to decode the same batch (the ranks are statistically alike: round-robin requests of
one workload) plus that prompt; several prompts in one step: the longest sets the step (the
ranks run side by side, the largest is padded to). The difference is booked as prefill time:
another rank's prefill the simulated rank waited on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from mtpsim.models.cost import StepShape


class Lockstep:
    """The other ranks' prompt arrivals (engine-side seconds, prompt tokens), consumed in order
    as the simulated rank's steps run past them."""

    def __init__(self, arrive_s: np.ndarray, prompt: np.ndarray, topk: int) -> None:
        order = np.argsort(arrive_s, kind="stable")
        self.arrive_s = np.asarray(arrive_s, float)[order]
        self.prompt = np.asarray(prompt, float)[order]
        self.topk = topk
        self.next = 0  # first arrival not yet prefilled
        self.since = -np.inf  # start of the last step run: earlier arrivals were prefilled

    def add(self, arrive_s: float, prompt: np.ndarray) -> None:
        """More arrivals at `arrive_s`, none earlier than those held (the other ranks'
        requests as their API servers admit them, mtpsim.sim.frontend)."""
        self.arrive_s = np.append(self.arrive_s, np.full(len(prompt), arrive_s))
        self.prompt = np.append(self.prompt, np.asarray(prompt, float))

    def price(self, cost: Any, shape: StepShape, phases: dict[str, np.ndarray], t0: float,
              steps: int, until: float = np.inf) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Phases of a run of steps starting at `t0` with the other ranks' prompts landing in
        its first `steps` (an arrival lands in the first step that starts at or after it; one
        that came during the last step run, in the first; none after `until`, where the run
        is cut), and the steps' start times (for `commit`)."""
        self.next += int(np.searchsorted(self.arrive_s[self.next:], self.since, side="right"))
        stop = self.next + int(np.searchsorted(self.arrive_s[self.next:], until, side="right"))
        arrive, prompt = self.arrive_s[self.next:stop], self.prompt[self.next:stop]
        own = sum(phases.values())
        if not arrive.size:
            return phases, t0 + np.concatenate([[0.0], np.cumsum(own)[:-1]])
        total, before = own, np.zeros(len(own))
        for _ in range(2):  # arrivals by the step times, then once more with the stalls priced
            start = t0 + np.concatenate([[0.0], np.cumsum(total)[:-1]])
            at = np.searchsorted(start, arrive, side="left")
            inside = at < steps
            longest = np.zeros(len(own))
            np.maximum.at(longest, at[inside], prompt[inside])
            if np.array_equal(longest, before):
                break
            total = self._stalled(cost, shape, own, longest, before, total)
            before = longest
        start = t0 + np.concatenate([[0.0], np.cumsum(total)[:-1]])
        out = dict(phases)
        out["prefill"] = phases["prefill"] + (total - own)
        return out, start

    def _stalled(self, cost: Any, shape: StepShape, own: np.ndarray, longest: np.ndarray,
                 before: np.ndarray, priced: np.ndarray) -> np.ndarray:
        """Each step's seconds: its own, or the other rank's (the same decodes plus the longest
        prompt that lands in it) when that is longer; steps whose prompt is as `before` keep
        their `priced` seconds."""
        out = np.where(longest == before, priced, own)
        hit = np.flatnonzero((longest > 0) & (longest != before))
        if not hit.size:
            return out
        p = longest[hit]
        other = StepShape(**{f.name: np.broadcast_to(np.asarray(getattr(shape, f.name), float),
                                                      own.shape)[hit]  # a field given as one number
                             for f in dataclasses.fields(StepShape)})
        other.prefill_tokens = p
        cap = self.topk  # sum over positions 1..p of min(position, top-k): sum_min(1, p, top-k)
        other.prefill_keys = np.where(p <= cap, p * (p + 1) / 2, cap * (cap + 1) / 2 + cap * (p - cap))
        other.prefill_pairs = p * (p + 1) / 2
        other.prefill_reads = p
        other.prefill_done = np.ones(hit.size)
        other.num_draft = other.num_decode + 1
        other.draft_ctx = other.decode_ctx + p
        other.draft_keys = other.decode_keys + np.minimum(p, self.topk)
        theirs = sum(cost.step(other).values())
        out[hit] = np.maximum(own[hit], theirs)
        return out

    def commit(self, start: np.ndarray, n: int) -> None:
        """The first `n` steps ran: every arrival up to the last one's start is prefilled."""
        self.since = float(start[n - 1])
