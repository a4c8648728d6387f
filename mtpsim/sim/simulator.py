"""Serving simulation: client -> scheduler -> engine steps priced by the cost model.

Events are request sends, prompt chunks completing and requests finishing. A step that holds a
prompt chunk (or that may admit a waiting request) runs alone; otherwise the batch is unchanged
until the next event, so the simulator draws the accepted counts of all running requests for a
run of steps at once ([requests, steps] numpy arrays), finds the step at which the first
request finishes or the next request is sent, and advances everything to it in one go.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mtpsim.arrivals import Client, send_offsets
from mtpsim.metrics import RequestRecord, SpecDecodeCounters
from mtpsim.models.acceptance import draw_accepted
from mtpsim.models.build import models_for
from mtpsim.models.cost import StepShape
from mtpsim.result import PHASES, Result
from mtpsim.sim.entities import RequestTable, draw_lengths
from mtpsim.sim.scheduler import Plan, Scheduler
from mtpsim.spec import Experiment

if TYPE_CHECKING:
    from mtpsim.calibration.schema import Calibration

MAX_BULK_STEPS = 256  # caps context drift within one bulk (acceptance is read at its start)
Progress = Callable[[int, int], None]


@dataclass(slots=True)
class StepLog:
    """Phase seconds summed over steps, and step counts."""

    totals: dict[str, float]
    saved_vs_fresh_s: float = 0.0  # same batches priced under `fresh` minus under this policy
    steps: int = 0
    decode_only_steps: int = 0
    python_iterations: int = 0

    def add(self, phases: dict[str, np.ndarray], n: int, decode_only: bool) -> None:
        for name, v in phases.items():
            self.totals[name] += float(v[:n].sum())
        self.steps += n
        self.decode_only_steps += n if decode_only else 0
        self.python_iterations += 1

    def add_one(self, phases: dict[str, np.ndarray], decode_only: bool) -> None:
        """One step whose phases are scalars."""
        for name, v in phases.items():
            self.totals[name] += float(v)
        self.steps += 1
        self.decode_only_steps += decode_only
        self.python_iterations += 1


def _sum_min(a: int, b: int, cap: int) -> float:
    """sum_{p=a}^{b} min(p, cap) for 1 <= a <= b."""
    if b <= cap:
        return (a + b) * (b - a + 1) / 2
    if a > cap:
        return cap * (b - a + 1)
    return (a + cap) * (cap - a + 1) / 2 + cap * (b - cap)


class Simulator:
    """Simulates one policy of an experiment; `run()` returns a Result."""

    def __init__(self, exp: Experiment, policy: str, progress: Progress | None = None,
                 calibration: Calibration | None = None) -> None:
        # a calibration fitted from real traces replaces the acceptance model and the roofline
        models = models_for(exp, policy, calibration)
        self.exp, self.policy, self.progress = exp, policy, progress
        self.k = exp.k
        self.topk = models.topk
        self.cost, self.fresh_cost, self.acc = models.cost, models.fresh_cost, models.acceptance
        self.expected = exp.acceptance.mode == "expected"
        # one stream for the workload, one for acceptance: every policy sees the same requests
        # and the same uniforms (common random numbers), so policy deltas are not sampling noise
        w_seq, a_seq = np.random.SeedSequence(exp.seed).spawn(2)
        w_rng = np.random.default_rng(w_seq)
        self.rng = np.random.default_rng(a_seq)
        w = exp.workload
        self.reqs = RequestTable(
            draw_lengths(w_rng, w.num_prompts, w.input_len, w.input_len_distribution,
                         w.input_len_spread),
            draw_lengths(w_rng, w.num_prompts, w.output_len, w.output_len_distribution,
                         w.output_len_spread), self.k)
        # per-request acceptance shifts: normal quantiles in random order (stratified), so even
        # a few hundred requests carry the intended spread and no accidental mean shift
        n = w.num_prompts
        order = w_rng.permutation(n)
        if self.acc.sigma > 0:
            from scipy.special import ndtri  # scipy.special alone costs more than a simulation

            self.shift = self.acc.sigma * ndtri((order + 0.5) / n)
        else:
            self.shift = np.zeros(n)
        self.client = Client(send_offsets(n, w.request_rate, w.burstiness, exp.seed),
                             w.max_concurrency)
        e = exp.engine
        if e.scheduler == "reference":  # no token budget; prompts prefilled whole when admitted
            self.sched = Scheduler(self.reqs, e.max_num_seqs, 2**62, False, self.k)
        else:
            self.sched = Scheduler(self.reqs, e.max_num_seqs, e.max_num_batched_tokens,
                                   e.enable_chunked_prefill, self.k)
        self.log = StepLog({p: 0.0 for p in PHASES})
        self.t = 0.0
        self.finished = 0

    # ---- main loop ---------------------------------------------------------------------------
    def run(self) -> Result:
        n = len(self.reqs)
        while self.finished < n:
            for rid, s in self.client.send_until(self.t):
                self.reqs.send_s[rid] = s
                self.sched.add(rid)
            if not self.sched.running and not self.sched.waiting:
                self.t = self.client.next_send_s()
                continue
            plan = self.sched.plan()
            bulk = (not plan.chunks and len(plan.decodes) == len(self.sched.running)
                    and not self.sched.can_admit())
            if bulk:
                self._advance_decodes(np.asarray(plan.decodes))
            else:
                self._single_step(plan)
            if self.progress is not None:
                self.progress(self.finished, n)
        return self._result()

    # ---- a run of identical decode-only steps ------------------------------------------------
    def _advance_decodes(self, ids: np.ndarray) -> None:
        reqs, k = self.reqs, self.k
        remaining = reqs.output_len[ids] - reqs.generated[ids]
        ctx0 = reqs.context(ids)
        marg = self.acc.marginal(ctx0, self.shift[ids])  # [b, k]
        cap = int(min(MAX_BULK_STEPS, max(1, math.ceil(remaining.min()))))
        if self.expected:
            per_step = 1.0 + marg.sum(axis=1)
            cum = per_step[:, None] * np.arange(1, cap + 1)[None, :]
            accepted = None
        else:
            accepted = draw_accepted(self.rng, marg, cap)  # [b, cap]
            cum = np.cumsum(1 + accepted, axis=1)
        done_at = np.where((cum >= remaining[:, None]).any(axis=1),
                           (cum >= remaining[:, None]).argmax(axis=1) + 1, cap)
        n = int(done_at.min())
        ctx = ctx0[:, None] + np.concatenate([np.zeros((ids.size, 1)), cum[:, :-1]], axis=1)
        keys = np.minimum(ctx, self.topk).sum(axis=0)
        ctx_sum = ctx.sum(axis=0)
        shape = StepShape(num_decode=ids.size, decode_ctx=ctx_sum, decode_keys=keys,
                          num_draft=ids.size, draft_ctx=ctx_sum, draft_keys=keys)
        phases = self.cost.step(shape)
        step_s = sum(phases.values())
        fresh_s = step_s if self.fresh_cost is None else sum(self.fresh_cost.step(shape).values())
        elapsed = np.cumsum(step_s)
        if len(self.sched.running) < self.sched.max_num_seqs:
            t_next = self.client.next_send_s()
            if math.isfinite(t_next):  # the batch changes at the step end after the next send
                n = min(n, int(np.searchsorted(elapsed, t_next - self.t)) + 1)
        n = max(1, min(n, cap))
        self.log.add(phases, n, decode_only=True)
        self.log.saved_vs_fresh_s += float(np.sum((fresh_s - step_s)[:n]))
        reqs.drafts[ids] += n
        if accepted is None:
            reqs.accepted[ids] += n * marg.sum(axis=1)
            reqs.accepted_per_pos[ids] += n * marg
        else:
            a = accepted[:, :n]
            reqs.accepted[ids] += a.sum(axis=1)
            reqs.accepted_per_pos[ids] += (a[:, :, None] > np.arange(k)).sum(axis=1)
        reqs.generated[ids] += cum[:, n - 1]
        gap = float(elapsed[n - 1]) / n
        for rid in ids.tolist():
            reqs.add_itl(rid, gap, n)
        self.t += float(elapsed[n - 1])
        reqs.last_chunk_s[ids] = self.t
        self._finish(ids)

    # ---- one step with prompt chunks (or a partial decode batch) -----------------------------
    def _single_step(self, plan: Plan) -> None:
        reqs, k, topk = self.reqs, self.k, self.topk
        dec = np.asarray(plan.decodes, dtype=np.int64)
        ctx = reqs.context(dec)
        completing = [rid for rid, start, n in plan.chunks if start + n == reqs.input_len[rid]]
        comp_ctx = reqs.input_len[completing].astype(float)
        keys = float(np.minimum(ctx, topk).sum())
        shape = StepShape(
            num_decode=dec.size, decode_ctx=float(ctx.sum()), decode_keys=keys,
            num_draft=dec.size + len(completing),
            draft_ctx=float(ctx.sum() + comp_ctx.sum()),
            draft_keys=keys + float(np.minimum(comp_ctx, topk).sum()),
            prefill_tokens=sum(n for _, _, n in plan.chunks),
            prefill_keys=sum(_sum_min(s + 1, s + n, topk) for _, s, n in plan.chunks),
            prefill_pairs=sum((2 * s + n + 1) * n / 2 for _, s, n in plan.chunks),
            prefill_reads=float(sum(s + n for _, s, n in plan.chunks)),
            prefill_done=len(completing))
        phases = self.cost.step(shape)
        step_s = float(sum(float(v) for v in phases.values()))
        if self.fresh_cost is not None:
            fresh_s = float(sum(float(v) for v in self.fresh_cost.step(shape).values()))
            self.log.saved_vs_fresh_s += fresh_s - step_s
        self.log.add_one(phases, decode_only=not plan.chunks)
        self.t += step_s
        if dec.size:
            marg = self.acc.marginal(ctx, self.shift[dec])
            reqs.drafts[dec] += 1
            if self.expected:
                tokens = 1.0 + marg.sum(axis=1)
                reqs.accepted[dec] += marg.sum(axis=1)
                reqs.accepted_per_pos[dec] += marg
            else:
                a = draw_accepted(self.rng, marg, 1)[:, 0]
                tokens = 1.0 + a
                reqs.accepted[dec] += a
                reqs.accepted_per_pos[dec] += a[:, None] > np.arange(k)
            reqs.generated[dec] += tokens
            for rid in dec.tolist():
                reqs.add_itl(rid, self.t - float(reqs.last_chunk_s[rid]))
            reqs.last_chunk_s[dec] = self.t
        for rid, _, n in plan.chunks:
            reqs.prefilled[rid] += n
        if completing:
            done = np.asarray(completing)
            reqs.first_token_s[done] = self.t
            reqs.last_chunk_s[done] = self.t
            reqs.generated[done] = 1.0
        self._finish(np.concatenate([dec, np.asarray(completing, dtype=np.int64)]))

    def _finish(self, ids: np.ndarray) -> None:
        reqs = self.reqs
        done = ids[reqs.generated[ids] >= reqs.output_len[ids] - 1e-9]
        if not done.size:
            return
        reqs.generated[done] = reqs.output_len[done]
        reqs.finish_s[done] = self.t
        self.sched.finish(set(done.tolist()))
        self.client.on_finish(self.t, int(done.size))
        self.finished += int(done.size)

    # ---- result ------------------------------------------------------------------------------
    def _result(self) -> Result:
        reqs, k = self.reqs, self.k
        records = []
        for i in range(len(reqs)):
            per_pos = [int(round(x)) for x in reqs.accepted_per_pos[i]]
            records.append(RequestRecord(
                request_id=f"sim-{i}", input_len=int(reqs.input_len[i]),
                output_len=int(reqs.output_len[i]), arrival_s=float(reqs.send_s[i]),
                first_token_s=float(reqs.first_token_s[i]), finish_s=float(reqs.finish_s[i]),
                itl_s=list(reqs.itl_s[i]), itl_count=list(reqs.itl_count[i]),
                num_drafts=int(reqs.drafts[i]), num_draft_tokens=int(reqs.drafts[i]) * k,
                num_accepted_tokens=int(round(reqs.accepted[i])), accepted_per_pos=per_pos))
        drafts = int(reqs.drafts.sum())
        counters = SpecDecodeCounters(
            drafts, drafts * k, int(round(reqs.accepted.sum())),
            [int(round(x)) for x in reqs.accepted_per_pos.sum(axis=0)])
        log = self.log
        duration = float(np.nanmax(reqs.finish_s))
        return Result.from_requests(
            mode="simulate", policy=self.policy, requests=records, duration_s=duration,
            counters=counters, seed=self.exp.seed, experiment=self.exp.source,
            spec=self.exp.to_dict(),
            phases={p: log.totals[p] / max(log.steps, 1) for p in PHASES},
            extra={"num_steps": log.steps, "decode_only_steps": log.decode_only_steps,
                   "python_iterations": log.python_iterations,
                   "step_saving_vs_fresh_s": log.saved_vs_fresh_s / max(log.steps, 1),
                   "phases_total_s": dict(log.totals),
                   "acceptance_mode": self.exp.acceptance.mode})


def simulate(exp: Experiment, policy: str, progress: Progress | None = None,
             calibration: Calibration | None = None) -> Result:
    """Simulate one policy of `exp` (with a fitted calibration if given or named by the spec)."""
    return Simulator(exp, policy, progress, calibration).run()
