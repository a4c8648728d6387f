"""The simulator's outputs-first path (rate inf, a token budget that covers every decode).

When no decision needs seconds and every running request decodes at every step, each request's
decode steps are drawn first (mtpsim.sim.decoding); the scheduler then runs event to event
(one Python iteration per finish, plain integers, a heap of finish steps), and all steps are
priced at once at the end (mtpsim.sim.clock). Inter-token latencies are booked per request as
runs between steps with prompt chunks.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

import numpy as np

from mtpsim.models.cost import StepShape
from mtpsim.sim import bulk
from mtpsim.sim.decoding import Decoding, draw_decoding

if TYPE_CHECKING:
    from mtpsim.sim.simulator import Simulator


def run_planned(sim: Simulator) -> None:
    """Run `sim` to its end (`sim.plannable()` holds): draw the outputs, schedule from finish
    to finish, price every step once; leaves the stamps and counters for `sim._result()`."""
    reqs, sched, frontend = sim.reqs, sim.sched, sim.frontend
    n, topk = len(reqs), sim.topk
    dec = draw_decoding(sim.acc, None if sim.expected else sim.rng, reqs.input_len,
                        reqs.output_len, sim.shift, sim.k, bulk.MAX_BULK_STEPS)
    d_steps = dec.steps.tolist()
    input_len = reqs.input_len.tolist()
    admitted_at = reqs.admitted_at  # written per admitted id: numpy indexing by an empty list
    start = np.full(n, -1, np.int64)  # first decode step (= position of the first token)
    chunks: list[tuple[int, int, float, float, float]] = []  # step, tokens, keys, pairs, reads
    finishing: list[tuple[int, int]] = []  # heap of (finish position, request)
    pos = 0
    while sim.finished < n:
        for rid, s in frontend.send_until(float(pos)):
            reqs.send_at[rid] = s
            sched.add(rid)
        ahead = sched.lookahead(2**62)
        sim.log.python_iterations += 1
        next_finish = finishing[0][0] if finishing else None
        for plan in ahead.steps:
            for rid in plan.admitted:
                admitted_at[rid] = pos
            tok = keys = pairs = reads = 0.0
            for rid, st, m in plan.chunks:
                tok, keys = tok + m, keys + bulk.sum_min(st + 1, st + m, topk)
                pairs, reads = pairs + (2 * st + m + 1) * m / 2, reads + st + m
                if st + m == input_len[rid]:
                    start[rid] = pos + 1
                    heapq.heappush(finishing, (pos + 1 + d_steps[rid], rid))
            chunks.append((pos, tok, keys, pairs, reads))
            sched.commit([plan])
            pos += 1
            next_finish = finishing[0][0] if finishing else None
            if next_finish is not None and next_finish <= pos:
                break
        else:
            if next_finish is None:
                raise RuntimeError("simulator stalled: no request can run")  # unreachable
            pos = next_finish  # decode-only steps up to the next finish
        done = set()
        while finishing and finishing[0][0] == pos:
            done.add(heapq.heappop(finishing)[1])
        if done:
            ids = np.fromiter(done, np.int64, len(done))
            reqs.finish_at[ids] = pos
            sched.finish(done)
            frontend.on_finish(float(pos), len(done))
            sim.finished += len(done)
        if sim.progress is not None:
            sim.progress(sim.finished, n)
    _price(sim, dec, start, chunks, pos)
    reqs.generated[:] = reqs.output_len
    reqs.first_token_at[:] = start
    reqs.drafts[:] = dec.steps
    reqs.accepted[:] = dec.accepted
    reqs.accepted_per_pos[:] = dec.accepted_per_pos
    reqs.expected_accepted[:] = dec.expected


def _price(sim: Simulator, dec: Decoding, start: np.ndarray, chunks: list, total: int) -> None:
    """All `total` steps' shapes from the requests' decode cells and the prompt chunks,
    priced at once; inter-token latencies booked per request as runs between chunk steps."""
    reqs, topk = sim.reqs, sim.topk
    n_dec = np.zeros(total + 1)
    np.add.at(n_dec, start, 1.0)
    np.add.at(n_dec, start + dec.steps, -1.0)
    num_dec = np.cumsum(n_dec)[:total]
    ctx_sum, key_sum, ctx_max = np.zeros(total), np.zeros(total), np.zeros(total)
    in_len = reqs.input_len.astype(float)
    for block in dec.blocks:
        j, before = block.cells()
        r = block.rows
        live = j < dec.steps[r, None]
        step = (start[r, None] + j)[live]
        ctx = (in_len[r, None] + before)[live]
        ctx_sum += np.bincount(step, ctx, total)
        key_sum += np.bincount(step, np.minimum(ctx, topk), total)
        np.maximum.at(ctx_max, step, ctx)
    pad = num_dec * ctx_max - ctx_sum  # every decoding request drafts in the batch's call
    comp = start - 1  # the step that completes the prompt
    completes = np.bincount(comp, minlength=total).astype(float)
    comp_ctx = np.bincount(comp, in_len, total)
    comp_keys = np.bincount(comp, np.minimum(in_len, topk), total)
    pre = np.zeros((4, total))
    at = np.array([c[0] for c in chunks], np.int64)
    pre[:, at] = np.array([c[1:] for c in chunks], float).T
    shape = StepShape(
        num_decode=num_dec, decode_ctx=ctx_sum, decode_keys=key_sum, decode_pad=pad, draft_pad=pad,
        num_draft=num_dec + completes, draft_ctx=ctx_sum + comp_ctx,
        draft_keys=key_sum + comp_keys, prefill_tokens=pre[0], prefill_keys=pre[1],
        prefill_pairs=pre[2], prefill_reads=pre[3], prefill_done=completes)
    sim.clock.run(shape, total, total - at.size)
    # runs: each chunk step on its own, the decode-only steps between two as one
    is_chunk = np.zeros(total, bool)
    is_chunk[at] = True
    new = is_chunk.copy()
    new[0] = True
    new[1:] |= is_chunk[:-1]
    seg = np.cumsum(new) - 1
    seg_start = np.flatnonzero(new)
    seg_stop = np.append(seg_start[1:], total)  # exclusive
    last = start + dec.steps - 1  # last decode step
    has = dec.steps > 0
    rid = np.flatnonzero(has)
    first_seg, last_seg = seg[start[has]], seg[last[has]]
    per = last_seg - first_seg + 1
    rep = np.repeat(rid, per)
    g = np.repeat(first_seg, per) + (np.arange(per.sum()) - np.repeat(np.cumsum(per) - per,
                                                                      per))
    a = np.maximum(seg_start[g], start[rep])
    z = np.minimum(seg_stop[g], last[rep] + 1)
    reqs.book_itl(rep, a, z, z - a)

