"""The December 2026 speed work (docs/speed.md) changes how, not what: the acceptance spread's
root-finding, the scheduler's cached prefill lengths and the planned path's admission stamps
give the very numbers of the straightforward code they replaced (which is written out here),
and the A/B script's JSON check flags anything but timing."""

from __future__ import annotations

import importlib.util
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from mtpsim.models.acceptance import _shifted, _spread_offsets
from mtpsim.sim import simulator as sim_mod
from mtpsim.sim.entities import RequestTable
from mtpsim.sim.scheduler import Scheduler
from mtpsim.spec import experiment_from_dict

ROOT = Path(__file__).resolve().parents[1]


def _spread_offsets_before(rates: tuple[float, ...], sigma: float, sweeps: int) -> tuple[float, ...]:
    """mtpsim.models.acceptance._spread_offsets as it was before the speed work."""
    from scipy.optimize import brentq

    cond = np.array(rates)
    k = cond.size
    delta = np.zeros(k)
    if sigma <= 0:
        return tuple(delta.tolist())
    z, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()
    target = np.cumprod(cond)

    def aggregate(d):
        m = np.cumprod(_shifted(np.broadcast_to(cond, (z.size, k)), d[None, :] + sigma * z[:, None]),
                       axis=1)
        drafts = w / (1.0 + m.sum(axis=1))
        return (drafts[:, None] * m).sum(axis=0) / drafts.sum()

    for _ in range(sweeps):
        for i in range(k):
            if not 0 < cond[i] < 1:
                continue

            def gap(x, i=i):
                d = delta.copy()
                d[i] = x
                return float(aggregate(d)[i] - target[i])

            delta[i] = brentq(gap, -30.0, 30.0, xtol=1e-10)
    return tuple(delta.tolist())


def test_spread_offsets_equal_the_code_before_to_the_bit():
    rng = np.random.default_rng(7)
    cases = [((0.9, 0.7, 0.5), 0.6), ((1.0, 0.8, 0.0), 0.3), ((0.55,), 1.2)]
    cases += [(tuple(rng.uniform(0.05, 0.98, size=int(rng.integers(1, 6)))), float(rng.uniform(0.05, 2)))
              for _ in range(12)]
    for rates, sigma in cases:
        assert _spread_offsets(rates, sigma, 4) == _spread_offsets_before(rates, sigma, 4), rates


class _PlannerBefore:
    """b90447c's planner (no KV cache): prompt lengths read from the table each time."""

    def __init__(self, input_len, max_num_seqs, budget, chunked, k):
        self.input_len, self.max_num_seqs, self.budget = input_len, max_num_seqs, budget
        self.chunked, self.k = chunked, k
        self.waiting, self.running, self.prefilling = deque(), [], {}

    def plan(self):
        k1, running, prefilling = self.k + 1, self.running, self.prefilling
        decodes = [r for r in running if r not in prefilling] if prefilling else list(running)
        decodes = decodes[:self.budget // k1]
        budget, chunks, admitted = self.budget - k1 * len(decodes), [], []
        for rid, done in list(prefilling.items()):
            budget -= self._chunk(chunks, rid, done, budget)
        while self.waiting and len(running) < self.max_num_seqs and budget > 0:
            rid = self.waiting[0]
            taken = self._chunk(chunks, rid, 0, budget)
            if not taken:
                break
            budget -= taken
            self.waiting.popleft()
            running.append(rid)
            admitted.append(rid)
        return decodes, chunks, admitted

    def _chunk(self, chunks, rid, start, budget):
        left = int(self.input_len[rid]) - start
        n = min(left, budget) if self.chunked else (left if left <= budget else 0)
        if n > 0:
            chunks.append((rid, start, n))
            if n == left:
                self.prefilling.pop(rid, None)
            else:
                self.prefilling[rid] = start + n
        return n


@pytest.mark.parametrize("chunked", [True, False])
def test_the_scheduler_without_a_kv_cache_plans_as_before(chunked):
    rng = np.random.default_rng(3 + chunked)
    n, k = 60, 2
    lens = rng.integers(1, 3000, size=n)
    reqs = RequestTable(lens, rng.integers(1, 50, size=n), k)
    sched = Scheduler(reqs, max_num_seqs=16, max_num_batched_tokens=2048, chunked_prefill=chunked,
                      k=k)
    ref = _PlannerBefore(lens, 16, 2048, chunked, k)
    arrivals = sorted(rng.integers(0, 200, size=n))
    for step in range(400):
        for rid in [i for i, t in enumerate(arrivals) if t == step]:
            sched.add(rid)
            ref.waiting.append(rid)
        plan = sched.plan()
        want = ref.plan()
        assert (plan.decodes, plan.chunks, plan.admitted) == want, step
        decoding = [r for r in sched.running if r not in sched.prefilling]
        if step % 7 == 6 and decoding:  # a decoding request finishes now and then
            done = {decoding[0]}
            sched.finish(done)
            ref.running = [r for r in ref.running if r not in done]


def test_cached_prefill_lengths_follow_every_preemption():
    tight = {"model": {"preset": "deepseek-v3.2"}, "hardware": {"preset": "h200"},
             "engine": {"tp": 8, "max_num_seqs": 512, "max_num_batched_tokens": 4096,
                        "non_kv_memory_gib": 43.5, "max_model_len": 4096},
             "speculative": {"num_speculative_tokens": 2}, "seed": 1,
             "acceptance": {"mode": "expected"},
             "workload": {"num_prompts": 300, "input_len": 400, "output_len": 300,
                          "input_len_distribution": "uniform", "input_len_spread": 0.5,
                          "output_len_distribution": "uniform", "output_len_spread": 0.5}}
    sim = sim_mod.Simulator(experiment_from_dict(tight), "fresh")
    res = sim.run()
    reqs = sim.reqs
    assert res.extra.num_preemptions > 0 and reqs.recompute.any()
    assert sim.sched._plen == [reqs.prefill_len(r) for r in range(len(reqs))]


def test_the_ab_scripts_json_check_flags_all_but_timing():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "benchmarks/bench_scheduler_vs_baseline.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    a = {"wall_s": 1.0, "results": {"fresh": {"metrics": {"median_ttft_ms": 608.4}}}}
    assert bench.differences(a, {**a, "wall_s": 2.5}) == []
    moved = {"wall_s": 1.0, "results": {"fresh": {"metrics": {"median_ttft_ms": 608.5}}}}
    assert bench.differences(a, moved) == ["/results/fresh/metrics/median_ttft_ms"]
    assert bench.differences(a, {"wall_s": 1.0}) == ["/results"]
