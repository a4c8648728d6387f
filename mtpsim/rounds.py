"""Interleaved rounds for real A/Bs, so the machine's drift cancels instead of landing in a delta.

A run of R rounds splits the experiment's seeded requests into R contiguous chunks; round r
serves chunk r under every policy, in the spec's order on even rounds and reversed on odd ones
(A B, B A, A B, ...: the A B B A pattern). Each policy sees the same prompts and per-request
seeds as a one-shot run, so pooling its rounds gives the one-shot run's acceptance; a linear
machine-speed ramp favours A in one round and B in the next, and a delta taken within each
round (then averaged over rounds) does not see it. `mtpsim.paired` does the statistics.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mtpsim.level import pooled
from mtpsim.request_record import RequestRecord
from mtpsim.result import PHASES, Result

MAX_AUTO_ROUNDS = 8

# Per-round figures a paired comparison reads (timings; acceptance pools over rounds).
ROUND_METRICS = ("output_throughput", "request_throughput", "total_token_throughput",
                 "median_ttft_ms", "mean_ttft_ms", "median_tpot_ms", "mean_tpot_ms",
                 "p90_tpot_ms", "p90_ttft_ms", "median_itl_ms", "median_e2el_ms", "mean_e2el_ms",
                 "duration")


def auto_rounds(num_prompts: int, concurrency: int) -> int:
    """Default rounds: as many as give every round at least one full batch (`concurrency`
    requests), at most MAX_AUTO_ROUNDS; 1 for a workload too small to split."""
    return max(1, min(MAX_AUTO_ROUNDS, num_prompts // max(1, concurrency)))


def order(policies: tuple[str, ...] | list[str], rounds: int) -> list[tuple[str, ...]]:
    """The policies of each round: the given order on even rounds, reversed on odd ones."""
    fwd = tuple(policies)
    return [fwd if r % 2 == 0 else fwd[::-1] for r in range(rounds)]


def chunks(n: int, rounds: int) -> list[range]:
    """Request indices of each round: `n` split into `rounds` contiguous, near-equal chunks."""
    bounds = [round(n * r / rounds) for r in range(rounds + 1)]
    return [range(bounds[r], bounds[r + 1]) for r in range(rounds)]


def summary(res: Result) -> dict[str, Any]:
    """What a pooled result keeps of one round: its place, its probes, its timing figures."""
    info = dict(res.extra.round or {})
    info["probe"] = res.extra.probe
    if res.extra.level is not None:
        info["level"] = res.extra.level
    info["metrics"] = {k: res.get(k) for k in ROUND_METRICS if isinstance(res.get(k), int | float)}
    return info


def pool(results: list[Result]) -> Result:
    """One policy's rounds as one result: requests concatenated, durations summed, per-step
    phases weighted by steps; `extra.rounds` keeps each round's summary."""
    first = results[0]
    reqs: list[RequestRecord] = []
    offset = 0.0
    for res in results:  # rounds run one after another: put their clocks end to end
        for q in res.requests or []:
            reqs.append(replace(q, arrival_s=q.arrival_s + offset, first_token_s=q.first_token_s + offset,
                                finish_s=q.finish_s + offset))
        offset += float(res.get("duration") or 0.0)
    steps = [int(r.extra.num_steps or 0) for r in results]
    total_steps = max(sum(steps), 1)
    phases = {p: sum(r.phases.get(p, 0.0) * s for r, s in zip(results, steps, strict=True)) / total_steps
              for p in PHASES}
    extra = first.extra.copy(round=None, probe=None, output_tokens_sha256=None, num_steps=sum(steps),
                             level=pooled([r.extra.level for r in results]))
    totals = [r.extra.phases_total_s for r in results]
    if all(t is not None for t in totals):
        extra.phases_total_s = {p: sum(t.get(p, 0.0) for t in totals) for p in PHASES}
    calls = [r.extra.mtp_indexer_calls_per_step for r in results]
    if all(c is not None for c in calls):
        extra.mtp_indexer_calls_per_step = [sum(c) for c in zip(*calls, strict=True)]
    extra.shadow_s = sum(float(r.extra.shadow_s or 0.0) for r in results)
    extra.output_tokens_sha256_per_round = [r.extra.output_tokens_sha256 for r in results]
    extra.rounds = [summary(r) for r in results]
    return Result.from_requests(mode=first.mode, policy=first.policy, requests=reqs, duration_s=offset,
                                seed=first.seed, experiment=first.experiment, spec=first.spec,
                                phases=phases, extra=extra)


def pool_traces(traces: list[Any]) -> Any:
    """One policy's round traces as one trace: steps renumbered and their times laid end to end."""
    from mtpsim.trace import Trace

    first = traces[0]
    steps, offset, n = [], 0.0, 0
    for tr in traces:
        for s in tr.steps:
            steps.append(replace(s, step=n, time_s=s.time_s + offset))
            n += 1
        if tr.steps:
            last = tr.steps[-1]
            offset += last.time_s + sum(last.phases.values())
    probes = [p for tr in traces for p in tr.meta.probe or []]
    return Trace(first.engine, first.policy, first.num_speculative_tokens, first.index_topk, steps,
                 first.meta.copy(rounds=len(traces), probe=probes,
                                 level=pooled([tr.meta.level for tr in traces])))
