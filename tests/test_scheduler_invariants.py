"""Scheduler invariants over whole simulations: never more than max_num_seqs running, the token
budget respected, prompts prefilled exactly once, every request finishing with its output length."""

import numpy as np
import pytest

from mtpsim.sim import simulator as sim_mod
from mtpsim.sim.scheduler import Scheduler
from mtpsim.spec import experiment_from_dict


def small(**workload) -> dict:
    w = {"num_prompts": 24, "input_len": 3000, "output_len": 60, "max_concurrency": 10,
         "input_len_distribution": "uniform", "input_len_spread": 0.5,
         "output_len_distribution": "lognormal", "output_len_spread": 0.6}
    w.update(workload)
    return {"engine": {"tp": 8, "max_num_seqs": 6, "max_num_batched_tokens": 2048},
            "workload": w, "seed": 3}


@pytest.mark.parametrize("mode", ["sampled", "expected"])
@pytest.mark.parametrize("chunked", [True, False])
def test_batches_respect_max_num_seqs_and_the_token_budget(monkeypatch, mode, chunked):
    raw = small(input_len=1500, input_len_spread=0.2)
    raw["engine"]["enable_chunked_prefill"] = chunked
    raw["acceptance"] = {"mode": mode}
    exp = experiment_from_dict(raw)
    plans, committed = [], []
    lookahead, commit = Scheduler.lookahead, Scheduler.commit

    def recording(self, limit):
        ahead = lookahead(self, limit)
        # every planned step (the chunk steps and the repeating decode-only one), with the most
        # requests running in any of them
        for plan in [*ahead.steps, *([ahead.steady] if ahead.steady else [])]:
            plans.append((len(ahead.ids), plan, self.reqs.input_len.copy()))
        return ahead

    def recording_commit(self, ran):
        committed.extend(ran)
        commit(self, ran)

    monkeypatch.setattr(Scheduler, "lookahead", recording)
    monkeypatch.setattr(Scheduler, "commit", recording_commit)
    sim = sim_mod.Simulator(exp, "fresh")
    sim.run()
    k = exp.k
    assert plans
    for running, plan, _ in plans:
        assert running <= exp.engine.max_num_seqs
        tokens = len(plan.decodes) * (k + 1) + sum(n for _, _, n in plan.chunks)
        assert tokens <= exp.engine.max_num_batched_tokens
        if not chunked:
            for rid, start, n in plan.chunks:
                assert start == 0 and n == sim.reqs.input_len[rid]
    prefilled = np.zeros(len(sim.reqs), dtype=int)
    for plan in committed:  # the steps that ran
        for rid, _, n in plan.chunks:
            prefilled[rid] += n
    assert np.array_equal(prefilled, sim.reqs.input_len)


@pytest.mark.parametrize("rate", [float("inf"), 3.0])
def test_every_request_finishes_with_exactly_its_output_length(rate):
    exp = experiment_from_dict(small(request_rate=rate))
    sim = sim_mod.Simulator(exp, "share")
    res = sim.run()
    recs = res.requests
    assert len(recs) == exp.workload.num_prompts
    assert np.array_equal(sim.reqs.generated, sim.reqs.output_len)
    assert res.metrics["total_output_tokens"] == int(sim.reqs.output_len.sum())
    for r in recs:
        assert r.arrival_s <= r.first_token_s <= r.finish_s
        # one ITL per verification step: the first token comes from the prefill
        assert sum(r.itl_count) == r.num_drafts
        assert r.num_drafts + r.num_accepted_tokens >= r.output_len - 1
        assert r.num_drafts <= r.output_len - 1


def test_the_client_never_exceeds_max_concurrency():
    exp = experiment_from_dict(small())
    res = sim_mod.simulate(exp, "fresh")
    events = sorted([(r.arrival_s, 1) for r in res.requests] + [(r.finish_s, -1)
                                                               for r in res.requests],
                    key=lambda e: (e[0], e[1]))
    in_flight = np.cumsum([d for _, d in events])
    assert in_flight.max() <= exp.workload.max_concurrency


def test_a_finite_rate_spreads_the_sends():
    exp = experiment_from_dict(small(request_rate=2.0, max_concurrency=1000, num_prompts=40))
    res = sim_mod.simulate(exp, "fresh")
    sends = sorted(r.arrival_s for r in res.requests)
    # vLLM bench: the first request waits its own gap; the last goes out at exactly n / rate
    assert sends[0] > 0.0
    assert sends[-1] == pytest.approx(40 / 2.0, rel=1e-12)
