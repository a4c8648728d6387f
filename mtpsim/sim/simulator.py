"""Serving simulation: client -> scheduler -> engine steps priced by the cost model.

Events are request sends and finishes. Between two events the scheduler's plan is known
(mtpsim.sim.scheduler.Scheduler.lookahead: the steps holding prompt chunks, then a decode-only
step that repeats), so the simulator draws the accepted counts of every running request for a
run of steps at once ([requests, steps] numpy arrays), finds the step at which the first request
finishes (or the next request is sent), and advances everything to it in one go: one Python
iteration per event, not per step. Steps are priced in batches by mtpsim.sim.clock. At rate inf
with a token budget that covers every decode, mtpsim.sim.planned draws the outputs first and
schedules from finish to finish instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpsim.arrivals import send_offsets
from mtpsim.metrics import SpecDecodeCounters, latency_metrics, median
from mtpsim.models.acceptance import draw_accepted
from mtpsim.models.build import models_for
from mtpsim.models.cost import StepShape
from mtpsim.records import RunExtra
from mtpsim.result import PHASES, Result
from mtpsim.sim.bulk import MAX_BULK_STEPS, Bulk, sum_min
from mtpsim.sim.clock import Clock, StepLog
from mtpsim.sim.entities import RequestTable, draw_filtered, draw_lengths
from mtpsim.sim.frontend import api_servers, frontend_for, frontend_queue, streamed_times
from mtpsim.sim.lockstep import Lockstep
from mtpsim.sim.scheduler import KvCache, Lookahead, Plan, Scheduler
from mtpsim.spec import Experiment
from mtpsim.spec.sections import SCHEDULERS

if TYPE_CHECKING:
    from mtpsim.calibration.schema import Calibration

__all__ = ["Simulator", "api_servers", "frontend_queue", "simulate", "streamed_times"]

# deployment totals a DP run scales from its simulated rank (the others served as many)
DP_TOTALS = ("completed", "total_input_tokens", "total_output_tokens", "request_throughput",
             "output_throughput", "total_token_throughput", "spec_decode_num_drafts",
             "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
TAIL_MARGIN, TAIL_SLACK = 1.25, 8  # decode-only steps drawn past the expected first finish
Progress = Callable[[int, int], None]


def draw_requests(exp: Experiment, rng: np.random.Generator,
                  sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The workload's prompt and output lengths and each request's acceptance shift, drawn in
    that order from `rng` (the workload's stream)."""
    w = exp.workload
    n = w.num_prompts
    if w.max_total_len:
        inputs, outputs = draw_filtered(rng, n, (w.input_len, w.output_len),
                                        (w.input_len_spread, w.output_len_spread),
                                        w.max_total_len)
    else:
        inputs = draw_lengths(rng, n, w.input_len, w.input_len_distribution, w.input_len_spread)
        outputs = draw_lengths(rng, n, w.output_len, w.output_len_distribution,
                               w.output_len_spread)
    # per-request acceptance shifts: normal quantiles in random order (stratified), so even a
    # few hundred requests carry the intended spread and no accidental mean shift
    order = rng.permutation(n)
    if sigma <= 0:
        return inputs, outputs, np.zeros(n)
    if exp.acceptance.request_draw == "independent":  # the workload's own mean shift varies too
        return inputs, outputs, sigma * rng.standard_normal(n)
    from scipy.special import ndtri  # scipy.special alone costs more than a simulation

    return inputs, outputs, sigma * ndtri((order + 0.5) / n)


class Simulator:
    """Simulates one policy of an experiment; `run()` returns a Result (`records=False`: its
    metrics only, for callers that read nothing else). `requests`: only those of the seeded
    requests, as one round of `mtpsim run-real` serves them (sends from 0, a burst of its own)."""

    def __init__(self, exp: Experiment, policy: str, progress: Progress | None = None,
                 calibration: Calibration | None = None, records: bool = True,
                 requests: range | None = None) -> None:
        # a calibration fitted from real traces replaces the acceptance model and the roofline
        models = models_for(exp, policy, calibration)
        self.exp, self.policy, self.progress = exp, policy, progress
        self.records = records  # False: metrics only (no per-request records, no spec copy)
        self.k = exp.k
        self.topk = models.topk
        self.cost, self.fresh_cost, self.acc = models.cost, models.fresh_cost, models.acceptance
        self.expected = exp.acceptance.mode == "expected"
        # one stream for the workload, one for acceptance: every policy sees the same requests
        # and the same uniforms (common random numbers), so policy deltas are not sampling noise
        w_seq, a_seq = np.random.SeedSequence(exp.seed).spawn(2)
        w_rng = np.random.default_rng(w_seq)
        if requests is not None:  # each round draws its own acceptance uniforms
            a_seq = np.random.SeedSequence(a_seq.entropy, spawn_key=(*a_seq.spawn_key, requests.start))
        self.rng = np.random.default_rng(a_seq)
        w = exp.workload
        n = w.num_prompts
        inputs, outputs, shift = draw_requests(exp, w_rng, self.acc.sigma)
        sends, conc = send_offsets(n, w.request_rate, w.burstiness, exp.seed), w.max_concurrency
        self.first_id = 0 if requests is None else requests.start  # records keep workload-wide ids
        if requests is not None:  # one round: its requests, its schedule from 0 (as run-real's runner)
            ids = np.arange(requests.start, requests.stop)
            inputs, outputs, shift = inputs[ids], outputs[ids], shift[ids]
            sends = sends[ids] - sends[ids[0]]
        # Data parallelism: dp engines, each with its own scheduler and KV cache, get the
        # requests round-robin (vLLM 0.33.0 `v1/engine/core_client.py`
        # `DPLBAsyncMPClient.get_core_engine_for_request`, ~line 1751: "a burst spreads
        # round-robin"). One rank is simulated, the busiest (every dp-th request from the first:
        # ceil(n / dp) of them, ceil(concurrency / dp) in flight); its steps are priced with the
        # MoE batch of all ranks padded to its own, and the totals scaled by dp (`_result`).
        self.dp = exp.engine.dp
        self.lockstep: Lockstep | None = None
        self._prompts: np.ndarray | None = None  # every rank's prompts, for arrivals the API
        # server's loop reports (`_admit`)
        modelled = calibration is None and conc is None  # the API server's costs apply
        coupled = modelled and exp.calibration.frontend_ms_per_request > 0
        all_sends = sends  # every rank's: the API servers take them all
        if self.dp > 1:
            mine = np.arange(0, n, self.dp)
            if conc is None and requests is None and not (math.isinf(w.request_rate)
                                                          and not coupled):
                # the other ranks' prompts (sim/lockstep.py): when sent, or, behind the API
                # servers' loops, when the loop admits them (`_admit`)
                others = np.setdiff1d(np.arange(n), mine)
                self.lockstep = (Lockstep(np.zeros(0), np.zeros(0), self.topk) if coupled
                                 else Lockstep(sends[others], inputs[others], self.topk))
                self._prompts = inputs if coupled else None
            inputs, outputs, shift, sends = inputs[mine], outputs[mine], shift[mine], sends[mine]
            conc = None if conc is None else -(-conc // self.dp)
        self.reqs = RequestTable(inputs, outputs, self.k)
        self.shift = shift
        # The API server in front of the engine (mtpsim.sim.frontend): with its costs (no
        # fitted calibration, no concurrency limit), one event loop admits the requests and
        # streams the steps' outputs, taking turns; else requests reach the engine when sent.
        # The client times TTFT and latency from its own send.
        self.frontend = frontend_for(exp, all_sends, conc, self.dp, modelled)
        self.kv_size = None  # the KV cache's size (mtpsim.models.memory), when modelled
        e = exp.engine
        rule = SCHEDULERS[e.scheduler]
        # without a token budget, prompts are prefilled whole when admitted
        budget = ((e.max_num_batched_tokens, e.enable_chunked_prefill) if rule.token_budget
                  else (2**62, False))
        self.sched = Scheduler(self.reqs, e.max_num_seqs, *budget, self.k,
                               self._kv_cache(calibration) if rule.kv_cache else None)
        self.log = StepLog({p: 0.0 for p in PHASES})
        # rate inf: every send waits only for a slot, so no decision needs seconds until the
        # end and the client counts in positions (steps run); else it counts seconds
        self.deferred = math.isinf(w.request_rate) and not self.frontend.in_seconds
        self.finished = 0

    # ---- main loop ---------------------------------------------------------------------------
    def run(self) -> Result:
        n = len(self.reqs)
        self.clock = Clock(self.cost, self.fresh_cost, self.log)
        if self.plannable():
            from mtpsim.sim.planned import run_planned

            run_planned(self)
            return self._result()
        while self.finished < n:
            self._admit(self.frontend.send_until(self._now()))
            if not self.sched.running and not self.sched.waiting:
                self.clock.wait_until(self.frontend.next_send_s())
                continue
            self._advance(self.sched.lookahead(MAX_BULK_STEPS))
            if self.progress is not None:
                self.progress(self.finished, n)
        return self._result()

    def _admit(self, sent: list[tuple[int, float]]) -> None:
        """The engine sees these requests (id, when the client sent it); the other ranks'
        requests the API server's loop admitted join the lock-step."""
        for rid, s in sent:
            self.reqs.send_at[rid] = s
            self.sched.add(rid)
        others = self.frontend.others
        while others:
            t, ids = others.pop(0)
            if self.lockstep is not None and self._prompts is not None:
                self.lockstep.add(t, self._prompts[ids])

    def plannable(self) -> bool:
        """No decision needs seconds (rate inf), the token budget always covers a decode step of
        every running request and the KV cache never runs out: outputs can be drawn before the
        schedule."""
        return (self.deferred and self.sched.max_num_seqs * (self.k + 1) <= self.sched.budget
                and self.sched.kv is None)

    def _kv_cache(self, calibration: Calibration | None) -> KvCache | None:
        """vLLM's KV cache for this workload; None when it holds every request that can be in
        flight at once at its full length (then it never constrains the schedule). A calibration
        fitted on the CPU reference engine has no GPU memory to model."""
        from mtpsim.models.memory import (
            check_holds_one,
            check_within_max_model_len,
            kv_cache_size,
            request_tokens,
        )

        exp = self.exp
        if calibration is not None or exp.calibration.file:
            return None
        size = kv_cache_size(exp)
        self.kv_size = size
        reqs = self.reqs
        need = np.ceil(request_tokens(exp, reqs.input_len, reqs.output_len) / size.block_size)
        longest = int(need.argmax())
        check_within_max_model_len(exp, float(reqs.input_len[longest]),
                                   float(reqs.output_len[longest]))
        check_holds_one(exp, size, float(request_tokens(exp, reqs.input_len[longest],
                                                         reqs.output_len[longest])))
        in_flight = min(exp.engine.max_num_seqs, self.frontend.limit, len(reqs))
        if np.sort(need)[-in_flight:].sum() <= size.blocks:
            return None
        return KvCache(size.blocks, size.block_size, exp.k)

    def _now(self) -> float:
        """The client's clock: positions when deferred, else seconds."""
        return float(self.clock.pos) if self.deferred else self.clock.now()

    # ---- the steps up to the next event, at once ---------------------------------------------
    def _advance(self, ahead: Lookahead) -> None:
        """Run the planned steps (prompt chunks, then the repeating decode-only step) up to the
        first finish or send: accepted counts of every request for every step are drawn at
        once ([requests, steps]), acceptance read at the run's start."""
        bulk = self._plan(ahead)
        n = self._draw(bulk)  # steps up to the first finish
        kv_blocks = None
        if self.sched.kv is not None:  # up to the first step the drawn tokens would not let allocate
            n, kv_blocks = self._kv_steps(bulk.ids, bulk.dec, bulk.gen_after, bulk.tokens,
                                          bulk.pre_tok, bulk.trans, bulk.row, n)
        if self.deferred:  # no send can come before the first finish: price only up to it
            bulk.cut(n)
        shape, completes = self._shape(bulk)
        n = self._price(bulk, shape, n)
        self._book(bulk, n, completes, kv_blocks)
        self.sched.commit(bulk.trans[:n])
        self._finish(bulk.ids)

    def _plan(self, ahead: Lookahead) -> Bulk:
        """The run's requests and what each does at each step: the steps with prompt chunks as
        the scheduler planned them, then decode-only steps to a margin past the first finish."""
        reqs, trans, steady = self.reqs, ahead.steps, ahead.steady
        ids = np.asarray(ahead.ids, dtype=np.int64)
        row = {rid: i for i, rid in enumerate(ahead.ids)}
        n_tr = len(trans)
        # decoding at the start; the others complete a prompt (or its recomputation) in the run
        pending = set(self.sched.prefilling).union(*(p.admitted for p in trans))
        started = (np.fromiter((r not in pending for r in ahead.ids), bool, ids.size)
                   if pending else np.ones(ids.size, bool))
        ctx0 = reqs.input_len[ids] + reqs.generated[ids] + ~started
        marg = self.acc.marginal(ctx0, self.shift[ids])  # [b, k]
        rows, tail = self._tail(ids, row, started, marg, steady, n_tr)
        steps = max(n_tr + tail, 1)
        bulk = Bulk(ids, row, trans, started, marg,
                    plen=reqs.input_len[ids] + reqs.recompute[ids],  # tokens each prefill computes
                    dec=np.zeros((ids.size, steps), bool), comp=np.full(ids.size, steps, np.int64),
                    chunks=np.zeros((4, steps)),
                    pre_tok=np.zeros((ids.size, steps)) if self.sched.kv is not None else None)
        for j, plan in enumerate(trans):
            bulk.dec[[row[r] for r in plan.decodes], j] = True
            for rid, s, n in plan.chunks:
                bulk.chunks[:, j] += (n, sum_min(s + 1, s + n, self.topk), (2 * s + n + 1) * n / 2,
                                      s + n)
                if bulk.pre_tok is not None:
                    bulk.pre_tok[row[rid], j] = s + n + self.k
                if s + n == bulk.plen[row[rid]]:
                    bulk.comp[row[rid]] = j
        if tail:
            bulk.dec[rows, n_tr:] = True
        return bulk

    def _tail(self, ids: np.ndarray, row: dict[int, int], started: np.ndarray, marg: np.ndarray,
              steady: Plan | None, n_tr: int) -> tuple[np.ndarray | None, int]:
        """The rows of the repeating decode-only step and how many of it to draw: a margin past
        the expected first finish (a run that ends without an event is simply continued by the
        next one)."""
        if steady is None or not steady.decodes:
            return None, 0
        rows = np.fromiter((row[r] for r in steady.decodes), np.int64, len(steady.decodes))
        reqs = self.reqs
        left = reqs.output_len[ids][rows] - reqs.generated[ids][rows] - ~started[rows]
        first = float((left / (1.0 + marg[rows].sum(axis=1))).min())
        return rows, min(MAX_BULK_STEPS - n_tr, max(1, math.ceil(left.min())),
                         math.ceil(first * TAIL_MARGIN) + TAIL_SLACK)

    def _draw(self, bulk: Bulk) -> int:
        """Draw every decoding request's accepted drafts at every step (their expectation in
        expected mode); the output tokens after each step; the steps up to the first finish."""
        reqs, ids = self.reqs, bulk.ids
        if self.expected:
            bulk.tokens = bulk.dec * (1.0 + bulk.marg.sum(axis=1))[:, None]
        else:
            bulk.accepted = draw_accepted(self.rng, bulk.marg, bulk.steps) * bulk.dec  # [b, steps]
            bulk.tokens = bulk.dec * (1.0 + bulk.accepted)
        # a completed prompt has 1 output token
        done_prompt = np.arange(bulk.steps)[None, :] >= bulk.comp[:, None]
        bulk.gen_after = (np.cumsum(bulk.tokens, axis=1) + reqs.generated[ids][:, None]
                          + np.where(bulk.started[:, None], 0.0, done_prompt))
        fin = (bulk.gen_after >= reqs.output_len[ids][:, None] - 1e-9).any(axis=0)
        return int(fin.argmax()) + 1 if fin.any() else bulk.steps

    def _shape(self, bulk: Bulk) -> tuple[StepShape, np.ndarray]:
        """The steps' batch shapes for the cost model, and which request's prompt completes at
        which step ([b, steps])."""
        ctx = self.reqs.input_len[bulk.ids][:, None] + bulk.gen_after - bulk.tokens  # before the step
        completes = np.arange(bulk.steps)[None, :] == bulk.comp[:, None]
        in_len = bulk.plen.astype(float)  # context at a completed (re)prefill
        dec, topk, chunks = bulk.dec, self.topk, bulk.chunks
        dec_ctxs = dec * ctx
        dec_ctx = dec_ctxs.sum(axis=0)
        dec_keys = (dec * np.minimum(ctx, topk)).sum(axis=0)
        num_dec = dec.sum(axis=0)
        # every decoding request drafts in the batch's call: one padding for both (StepShape)
        pad = num_dec * dec_ctxs.max(axis=0, initial=0.0) - dec_ctx
        shape = StepShape(
            num_decode=num_dec, decode_ctx=dec_ctx, decode_keys=dec_keys, decode_pad=pad, draft_pad=pad,
            num_draft=num_dec + completes.sum(axis=0),
            draft_ctx=dec_ctx + (in_len[:, None] * completes).sum(axis=0),
            draft_keys=dec_keys + (np.minimum(in_len, topk)[:, None] * completes).sum(axis=0),
            prefill_tokens=chunks[0], prefill_keys=chunks[1], prefill_pairs=chunks[2],
            prefill_reads=chunks[3], prefill_done=completes.sum(axis=0))
        return shape, completes

    def _price(self, bulk: Bulk, shape: StepShape, n: int) -> int:
        """Price the steps and run the clock over the first `n` of them, ended early at the step
        after the next send when the batch has room for it; the steps run."""
        decode_only = np.cumsum(bulk.chunks[0] == 0)
        if self.deferred:
            self.clock.run(shape, n, int(decode_only[n - 1]))
        else:
            phases = self.cost.step(shape)
            room = len(self.sched.running) < self.sched.max_num_seqs
            if self.lockstep is not None:  # steps another rank's prompt holds up (no prompt
                # lands after the next send, which the steps' outputs can only delay)
                phases, start = self.lockstep.price(
                    self.cost, shape, phases, self.clock.now(), min(n, bulk.steps),
                    self.frontend.next_send_s() if room else math.inf)
            ends = self.clock.now() + np.cumsum(sum(phases.values()))
            chunks = _per_step(shape.num_decode, bulk.steps) + _per_step(shape.prefill_done,
                                                                           bulk.steps)
            t_next = self.frontend.next_send_s(ends, chunks) if room else math.inf
            if room:
                if math.isfinite(t_next):  # the batch changes at the step end after the next send
                    n = min(n, int(np.searchsorted(ends, t_next)) + 1)
            n = max(1, min(n, bulk.steps))
            if self.lockstep is not None:
                self.lockstep.commit(start, n)
            self.clock.run(shape, n, int(decode_only[n - 1]), phases)
            self.frontend.on_steps(ends[:n], chunks[:n])
        self.log.python_iterations += 1
        return n

    def _book(self, bulk: Bulk, n: int, completes: np.ndarray, kv_blocks: np.ndarray | None) -> None:
        """Book the `n` steps run: drafts and accepted tokens, output tokens, first-token and
        admission positions, inter-token latencies, the KV blocks held."""
        reqs, ids, k, marg = self.reqs, bulk.ids, self.k, bulk.marg
        dec = bulk.dec[:, :n]
        drafts = dec.sum(axis=1)
        reqs.drafts[ids] += drafts
        reqs.expected_accepted[ids] += drafts * marg.sum(axis=1)
        if bulk.accepted is None:
            reqs.accepted[ids] += drafts * marg.sum(axis=1)
            reqs.accepted_per_pos[ids] += drafts[:, None] * marg
        else:
            a = bulk.accepted[:, :n]
            reqs.accepted[ids] += a.sum(axis=1)
            reqs.accepted_per_pos[ids] += (a[:, :, None] > np.arange(k)).sum(axis=1)
        reqs.generated[ids] = bulk.gen_after[:, n - 1]
        ends = np.arange(self.clock.pos - n + 1, self.clock.pos + 1, dtype=float)  # positions
        first = (bulk.comp < n) & np.isnan(reqs.first_token_at[ids])
        reqs.first_token_at[ids[first]] = ends[bulk.comp[first]]
        for j, plan in enumerate(bulk.trans[:n]):
            for rid in plan.admitted:
                if np.isnan(reqs.admitted_at[rid]):
                    reqs.admitted_at[rid] = ends[j] - 1
        # a recomputed prefill's token is a streamed chunk of its own (an ITL after the stall)
        resumed = reqs.recompute[ids] > 0
        self._book_itl(ids, dec | (completes[:, :n] & resumed[:, None]), completes[:, :n], ends,
                       len(bulk.trans))
        if kv_blocks is not None:
            kv = self.sched.kv
            last = kv_blocks[:, n - 1]
            kv.held.update((rid, int(b)) for rid, b in zip(ids.tolist(), last.tolist(), strict=True)
                           if b > 0)
            kv.peak = max(kv.peak, int(kv_blocks[:, :n].sum(axis=0).max()))

    def _kv_steps(self, ids: np.ndarray, dec: np.ndarray, gen_after: np.ndarray,
                  tokens: np.ndarray, pre_tok: np.ndarray, trans: list, row: dict[int, int],
                  n: int) -> tuple[int, np.ndarray]:
        """Steps (of the first `n`) that run before the drawn tokens outgrow the KV cache (the
        next step must preempt) or a tentative admission would not find its whole sequence's
        blocks free; and the blocks each request holds at each step ([b, steps]). The first
        step is the scheduler's exact `make_room`, so at least it runs."""
        kv, k = self.sched.kv, self.k
        ctx = self.reqs.input_len[ids][:, None] + gen_after - tokens  # context before the step
        need = np.ceil(np.where(dec, ctx + 2 * k, pre_tok) / kv.block_size)
        held0 = np.fromiter((kv.held.get(r, 0) for r in ids.tolist()), float, ids.size)
        blocks = np.maximum.accumulate(np.concatenate([held0[:, None], need], axis=1),
                                       axis=1)[:, 1:]  # allocations only grow
        total = blocks.sum(axis=0)
        over = total > kv.blocks
        assert not over[0], "KV cache over capacity at a step make_room allocated"
        if over[:n].any():
            n = int(over.argmax())
        for j, plan in enumerate(trans[1:n], 1):
            if not plan.admitted:
                continue
            adm = [row[r] for r in plan.admitted]
            free = kv.blocks - (total[j] - blocks[adm, j].sum())
            for rid, i in zip(plan.admitted, adm, strict=True):
                if max(kv.need(self.reqs.prefill_len(rid)), blocks[i, j]) > free:
                    return j, blocks
                free -= blocks[i, j]
        return n, blocks

    def _book_itl(self, ids: np.ndarray, dec: np.ndarray, completes: np.ndarray,
                  ends: np.ndarray, n_tr: int) -> None:
        """Each step with prompt chunks is booked on its own (its gap runs from the request's
        previous token); the decode-only steps after them as one run per request (its mean)."""
        reqs, n = self.reqs, ends.size
        # position of each request's latest token before each step, and after the last
        marks = np.where(dec | completes, ends[None, :], np.nan)
        last = np.fmax.accumulate(np.concatenate([reqs.last_token_at[ids][:, None], marks],
                                                 axis=1), axis=1)
        starts = np.arange(min(n, n_tr + 1))
        stops = np.append(starts[1:], n)
        count = np.add.reduceat(dec, starts, axis=1)
        reqs.book_itl(np.repeat(ids, starts.size), last[:, starts].ravel(),
                      last[:, stops].ravel(), count.ravel())
        reqs.last_token_at[ids] = last[:, -1]

    def _finish(self, ids: np.ndarray) -> None:
        reqs = self.reqs
        done = ids[reqs.generated[ids] >= reqs.output_len[ids] - 1e-9]
        if not done.size:
            return
        reqs.generated[done] = reqs.output_len[done]
        reqs.finish_at[done] = self.clock.pos
        self.sched.finish(set(done.tolist()))
        self.frontend.on_finish(self._now(), int(done.size))
        self.finished += int(done.size)

    # ---- result ------------------------------------------------------------------------------
    def _result(self) -> Result:
        reqs, k = self.reqs, self.k
        times = self.clock.times()
        times = self.frontend.seen(times, self.clock.chunks())  # after the API server streamed them
        if k == 0:  # plain decoding: the decode steps drafted nothing
            reqs.drafts[:] = 0
        drafts = int(reqs.drafts.sum())
        at = (lambda x: times[x.astype(np.int64)])  # noqa: E731
        send = at(reqs.send_at) if self.deferred else reqs.send_at
        first, finish = at(reqs.first_token_at), at(reqs.finish_at)
        counters = SpecDecodeCounters(
            drafts, drafts * k, int(round(reqs.accepted.sum())),
            [int(round(x)) for x in reqs.accepted_per_pos.sum(axis=0)])
        duration = float(finish.max())
        _, gaps, counts = reqs.itl_flat(times)
        metrics = latency_metrics(reqs.input_len, reqs.output_len, send, first, finish, gaps,
                                  counts, duration)
        metrics.update(counters.to_bench_keys())
        if self.dp > 1:  # the other ranks served as many: the deployment's totals and rates
            share = self.exp.workload.num_prompts / len(reqs)
            for key in DP_TOTALS:
                if key in metrics:
                    v = metrics[key] * share
                    metrics[key] = round(v) if isinstance(metrics[key], int) else v
        if k == 0:  # one token per step; no draft tokens, so no acceptance rate
            metrics["spec_decode_acceptance_length"] = 1.0
            del metrics["spec_decode_acceptance_rate"]
        records = None
        # the acceptance length the model expects on the path drawn (no draw noise): what a
        # calibrated acceptance model predicts, apart from one run's sampling luck
        expected_al = 1.0 + float(reqs.expected_accepted.sum()) / max(drafts, 1)
        if self.records:
            from mtpsim.request_record import RequestRecord

            # Whole counts per position; a request's accepted tokens are their sum (expected-value
            # mode carries fractions, and rounding the total apart could break that identity).
            per_pos = np.rint(reqs.accepted_per_pos).astype(np.int64)
            cols = zip(reqs.input_len.tolist(), reqs.output_len.tolist(), send.tolist(),
                       first.tolist(), finish.tolist(), reqs.itl_runs(times), reqs.drafts.tolist(),
                       per_pos.sum(axis=1).tolist(), per_pos.tolist(), strict=True)
            records = [RequestRecord(
                request_id=f"sim-{self.first_id + i}", input_len=i_len, output_len=o_len, arrival_s=s_at,
                first_token_s=f_at, finish_s=e_at, itl_s=runs[0], itl_count=runs[1],
                num_drafts=d, num_draft_tokens=d * k, num_accepted_tokens=a,
                accepted_per_pos=pp)
                for i, (i_len, o_len, s_at, f_at, e_at, runs, d, a, pp) in enumerate(cols)]
        log = self.log
        queue_s = at(reqs.admitted_at) - send
        kv, size = self.sched.kv, self.kv_size
        return Result(
            mode="simulate", policy=self.policy, metrics=metrics, requests=records,
            seed=self.exp.seed, experiment=self.exp.source,
            spec=self.exp.to_dict() if self.records else {},
            phases={p: log.totals[p] / max(log.steps, 1) for p in PHASES},
            extra=RunExtra(
                num_steps=log.steps, decode_only_steps=log.decode_only_steps,
                python_iterations=log.python_iterations,
                step_saving_vs_fresh_s=log.saved_vs_fresh_s / max(log.steps, 1),
                phases_total_s=dict(log.totals), acceptance_mode=self.exp.acceptance.mode,
                num_preemptions=self.sched.num_preemptions,
                preempted_requests=int((reqs.preemptions > 0).sum()),
                mean_queue_ms=1e3 * float(queue_s.mean()),
                median_queue_ms=1e3 * median(queue_s),
                kv_cache_tokens=None if size is None else size.tokens,
                kv_cache_peak_pct=None if kv is None else 100.0 * kv.peak / kv.blocks,
                dp_ranks=self.dp, rank_requests=len(reqs), expected_acceptance_length=expected_al))


def simulate(exp: Experiment, policy: str, progress: Progress | None = None,
             calibration: Calibration | None = None, records: bool = True,
             adjust: Callable[[Simulator], None] | None = None) -> Result:
    """Simulate one policy of `exp` (with a fitted calibration if given or named by the spec);
    `adjust(sim)` may change a simulator before it runs. With `workload.rounds` > 1, the
    requests are served as run-real's interleaved rounds serve them (mtpsim.sim.rounds)."""
    if exp.workload.rounds > 1:
        from mtpsim.sim.rounds import simulate_rounds

        def run_chunk(chunk: range) -> Result:
            sim = Simulator(exp, policy, None, calibration, True, requests=chunk)
            if adjust is not None:
                adjust(sim)
            return sim.run()

        return simulate_rounds(exp, run_chunk, progress, records)
    sim = Simulator(exp, policy, progress, calibration, records)
    if adjust is not None:
        adjust(sim)
    return sim.run()


def _per_step(x: Any, n: int) -> np.ndarray:
    """A StepShape field over `n` steps (an array over steps, or one number for all)."""
    a = np.asarray(x, float)
    return np.full(n, float(a)) if a.ndim == 0 else a[:n]
