"""Simulating the workload `mtpsim run-real` runs when it splits the requests into rounds.

A real run of R interleaved rounds (mtpsim.rounds) does not serve the spec's request stream: it
serves R consecutive chunks of it, each a burst of its own that starts from an empty engine at
t = 0, and pools them (requests concatenated, durations summed). With `workload.rounds = R` the
simulator does the same: each chunk simulated as its own run, then pooled by the very function
that pools the real rounds (`mtpsim.rounds.pool`), so a prediction and a rounds run describe
one workload. Simulating the stream instead prices every new request's prefill into the others'
decoding, which a burst of `max_concurrency` requests never sees (v10, docs/uncertainty.md §11).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from mtpsim.errors import SpecError
from mtpsim.result import Result

if TYPE_CHECKING:
    from mtpsim.sim.simulator import Progress
    from mtpsim.spec import Experiment


def _total(values: list[int | None], kept: int | None) -> int | None:
    """The rounds' sum, or `kept` (the first round's, as pooled) when one round lacks it."""
    return sum(v for v in values if v is not None) if None not in values else kept


def check_rounds(exp: Experiment) -> int:
    """The spec's rounds, checked against its workload (one line naming the field if not)."""
    r, n = exp.workload.rounds, exp.workload.num_prompts
    if r > n:
        raise SpecError(exp.source, "workload.rounds", f"expected at most num_prompts ({n}), got {r}")
    if r > 1 and exp.engine.dp > 1:
        raise SpecError(exp.source, "workload.rounds", "expected 0 or 1 with engine.dp > 1 (rounds "
                        "are the in-process reference engine's, one engine)")
    return max(r, 1)


def simulate_rounds(exp: Experiment, run_chunk: Callable[[range], Result],
                    progress: Progress | None = None, records: bool = True) -> Result:
    """One policy over the spec's rounds, each chunk its own run (`run_chunk(requests)`, with
    the requests' records kept), pooled as run-real pools."""
    from mtpsim import rounds as rounds_mod

    r, n = check_rounds(exp), exp.workload.num_prompts
    parts: list[Result] = []
    for i, chunk in enumerate(rounds_mod.chunks(n, r)):
        res = run_chunk(chunk)
        res.extra.round = {"index": i, "of": r, "requests": [chunk.start, chunk.stop]}
        parts.append(res)
        if progress is not None:
            progress(chunk.stop, n)
    pooled = rounds_mod.pool(parts)
    extra, each = pooled.extra, [p.extra for p in parts]
    extra.num_preemptions = _total([e.num_preemptions for e in each], extra.num_preemptions)
    extra.preempted_requests = _total([e.preempted_requests for e in each], extra.preempted_requests)
    extra.decode_only_steps = _total([e.decode_only_steps for e in each], extra.decode_only_steps)
    extra.python_iterations = _total([e.python_iterations for e in each], extra.python_iterations)
    drafts = [float(p.get("spec_decode_num_drafts") or 0) for p in parts]
    als = [e.expected_acceptance_length for e in each]
    if None not in als:  # draft-weighted, as the pooled counters are
        gained = sum((a - 1.0) * d for a, d in zip(als, drafts, strict=True))
        extra.expected_acceptance_length = 1.0 + gained / max(sum(drafts), 1.0)
    queued = [(e.mean_queue_ms, len(p.requests or [])) for e, p in zip(each, parts, strict=True)
              if e.mean_queue_ms is not None]
    if len(queued) == len(parts):
        extra.mean_queue_ms = sum(q * m for q, m in queued) / max(sum(m for _, m in queued), 1)
        medians = [e.median_queue_ms for e in each]
        extra.median_queue_ms = None if None in medians else max(medians)  # an upper bound
    peaks = [e.kv_cache_peak_pct for e in each]
    extra.kv_cache_peak_pct = None if None in peaks else max(peaks)
    if exp.k == 0:  # plain decoding: one token per step, as a stream's result says
        pooled.metrics["spec_decode_acceptance_length"] = 1.0
        pooled.metrics.pop("spec_decode_acceptance_rate", None)
    return pooled if records else replace(pooled, requests=None, spec={})
