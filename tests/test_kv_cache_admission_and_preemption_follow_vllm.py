"""The KV cache as vLLM 0.33.0's scheduler uses it: a scheduled request holds blocks for its
computed tokens, the tokens it runs and k lookahead slots; when they are not free the last
admitted running request is preempted (back to the front of the waiting queue, recomputing its
prompt and output so far); a step that preempted admits nothing; admission needs the whole
sequence's blocks free. Over whole simulations: never over capacity, the token budget held,
every preempted request recomputed and finished, and bulk advance equal to stepping."""

import numpy as np
import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.sim import simulator as sim_mod
from mtpsim.sim.entities import RequestTable
from mtpsim.sim.scheduler import KvCache, Scheduler
from mtpsim.spec import experiment_from_dict

# 8 x H200 TP8 DeepSeek-V3.2 fp8 with a cache shrunk (non_kv_memory_gib) so that 300 requests
# in flight outgrow it (max_model_len short enough that vLLM would start with it)
TIGHT = {"model": {"preset": "deepseek-v3.2"}, "hardware": {"preset": "h200"},
         "engine": {"tp": 8, "max_num_seqs": 512, "max_num_batched_tokens": 4096,
                    "non_kv_memory_gib": 43.5, "max_model_len": 4096},
         "speculative": {"num_speculative_tokens": 2}, "seed": 1,
         "workload": {"num_prompts": 300, "input_len": 400, "output_len": 300,
                      "input_len_distribution": "uniform", "input_len_spread": 0.5,
                      "output_len_distribution": "uniform", "output_len_spread": 0.5}}


def _table(inputs, outputs, k=2) -> RequestTable:
    return RequestTable(np.array(inputs), np.array(outputs), k)


def _running(sched: Scheduler, rid: int, generated: int) -> None:
    """Put `rid` in the running set as a decoding request holding its blocks."""
    sched.running.append(rid)
    sched.reqs.prefilled[rid] = sched.reqs.input_len[rid]
    sched.reqs.generated[rid] = generated
    sched.kv.held[rid] = sched.kv.need(sched.reqs.input_len[rid] + generated - 1 + 2 * sched.k)


def test_decodes_come_first_then_prompt_chunks_within_the_token_budget():
    reqs = _table([100, 100, 500], [50, 50, 50], k=3)
    sched = Scheduler(reqs, 8, 12, True, 3)
    sched.running = [0, 1]
    reqs.prefilled[[0, 1]] = 100
    reqs.generated[[0, 1]] = 5
    sched.add(2)
    plan = sched.plan()
    assert plan.decodes == [0, 1]  # 2 x (1 + k) = 8 tokens first
    assert plan.chunks == [(2, 0, 4)] and plan.admitted == [2]  # the 4 left go to the prompt


def test_admission_waits_until_the_whole_sequence_fits():
    reqs = _table([60, 60, 200], [100, 100, 10])
    kv = KvCache(blocks=12, block_size=16, lookahead=2)
    sched = Scheduler(reqs, 8, 1000, True, 2, kv)
    _running(sched, 0, 10)
    _running(sched, 1, 10)  # 2 x ceil((70 + 4) / 16) = 10 blocks; 2 left, the prompt needs 13
    sched.add(2)
    ahead = sched.lookahead(4)
    assert not ahead.steps and ahead.steady.admitted == [] and list(sched.waiting) == [2]
    assert sched.num_preemptions == 0
    sched.kv.held.pop(1)  # request 1 finished: its blocks are free
    sched.running.remove(1)
    sched.kv.blocks = 20
    assert sched.lookahead(4).steps[0].admitted == [2]


def test_preemption_takes_the_last_admitted_and_the_step_admits_nothing():
    reqs = _table([64, 64, 64, 64], [500, 500, 500, 10])
    kv = KvCache(blocks=15, block_size=16, lookahead=2)
    sched = Scheduler(reqs, 8, 1000, True, 2, kv)
    for rid in (0, 1, 2):
        _running(sched, rid, 11)  # context 75 -> ceil(79 / 16) = 5 blocks each: all 15 held
    sched.add(3)
    reqs.generated[[0, 1, 2]] = 14  # each now needs ceil(82 / 16) = 6 blocks: 18 > 15
    ahead = sched.lookahead(8)
    # the step does not repeat: the step after it may readmit the victim
    assert ahead.steady is None and len(ahead.steps) == 1
    plan = ahead.steps[0]
    assert sched.running == [0, 1] and list(sched.waiting) == [2, 3]  # to the front
    assert reqs.preemptions.tolist() == [0, 0, 1, 0] and sched.num_preemptions == 1
    assert reqs.recompute[2] == 14 and reqs.prefilled[2] == 0
    assert reqs.prefill_len(2) == 64 + 14  # prompt and output so far are computed again
    assert plan.decodes == [0, 1] and plan.admitted == []


def _spy(monkeypatch):
    """Record every planned step, the steps that ran, and the blocks held at each step run."""
    seen = {"plans": [], "ran": [], "totals": [], "preempted": []}
    lookahead, commit, kv_steps = Scheduler.lookahead, Scheduler.commit, sim_mod.Simulator._kv_steps
    preempt = Scheduler._preempt

    def rec_lookahead(self, limit):
        ahead = lookahead(self, limit)
        seen["plans"] += [*ahead.steps, *([ahead.steady] if ahead.steady else [])]
        return ahead

    def rec_commit(self, ran):
        seen["ran"] += ran
        commit(self, ran)

    def rec_kv_steps(self, *args):
        n, blocks = kv_steps(self, *args)
        seen["totals"].append((blocks[:, :n].sum(axis=0).max(), self.sched.kv.blocks))
        return n, blocks

    def rec_preempt(self, rid):
        seen["preempted"].append((rid, int(round(float(self.reqs.generated[rid])))))
        return preempt(self, rid)

    monkeypatch.setattr(Scheduler, "lookahead", rec_lookahead)
    monkeypatch.setattr(Scheduler, "commit", rec_commit)
    monkeypatch.setattr(Scheduler, "_preempt", rec_preempt)
    monkeypatch.setattr(sim_mod.Simulator, "_kv_steps", rec_kv_steps)
    return seen


@pytest.mark.parametrize("mode", ["sampled", "expected"])
def test_a_cache_too_small_for_the_batch_preempts_recomputes_and_stays_within_capacity(
        monkeypatch, mode):
    exp = experiment_from_dict({**TIGHT, "acceptance": {"mode": mode}})
    seen = _spy(monkeypatch)
    sim = sim_mod.Simulator(exp, "fresh")
    assert sim.sched.kv is not None and not sim.plannable()
    res = sim.run()
    reqs, kv = sim.reqs, sim.sched.kv
    assert res.extra.num_preemptions > 0 and res.extra.num_preemptions == len(seen["preempted"])
    assert res.extra.kv_cache_peak_pct <= 100.0
    assert all(total <= cap for total, cap in seen["totals"])  # never over capacity
    for plan in seen["plans"]:  # the token budget, decodes at 1 + k each
        tokens = len(plan.decodes) * (exp.k + 1) + sum(n for _, _, n in plan.chunks)
        assert tokens <= exp.engine.max_num_batched_tokens
    # a preempted request prefills its prompt again plus the output it had: every chunk run
    prefilled = np.zeros(len(reqs), int)
    for plan in seen["ran"]:
        for rid, _, n in plan.chunks:
            prefilled[rid] += n
    again = np.zeros(len(reqs), int)
    for rid, gen in seen["preempted"]:
        again[rid] += reqs.input_len[rid] + gen
    # a request preempted mid-prefill recomputes only what it had not lost: at most this
    assert (prefilled <= reqs.input_len + again).all() and (prefilled >= reqs.input_len).all()
    assert (prefilled > reqs.input_len).sum() >= len({r for r, g in seen["preempted"] if g > 0})
    assert np.array_equal(reqs.generated, reqs.output_len)  # every one finished, exactly
    assert not kv.held  # all blocks returned
    rec = {r.request_id: r for r in res.requests}
    assert all(rec[f"sim-{i}"].first_token_s <= rec[f"sim-{i}"].finish_s for i in range(len(reqs)))


def test_bulk_advance_equals_stepping_under_preemption(monkeypatch):
    raw = {**TIGHT, "acceptance": {"mode": "expected"},
           "workload": {**TIGHT["workload"], "num_prompts": 120}}
    raw["engine"] = {**TIGHT["engine"], "non_kv_memory_gib": 44.4}
    exp = experiment_from_dict(raw)
    bulk = sim_mod.simulate(exp, "fresh")
    assert bulk.extra.num_preemptions > 0
    monkeypatch.setattr(sim_mod, "MAX_BULK_STEPS", 1)
    single = sim_mod.simulate(exp, "fresh")
    assert single.extra.num_steps == bulk.extra.num_steps
    assert single.extra.num_preemptions == bulk.extra.num_preemptions
    for key in ("duration", "median_tpot_ms", "median_ttft_ms", "p90_e2el_ms", "mean_itl_ms"):
        assert single.metrics[key] == pytest.approx(bulk.metrics[key], rel=1e-9), key
    assert bulk.extra.python_iterations * 2 < single.extra.python_iterations


def test_a_cache_that_holds_every_request_changes_nothing():
    raw = {**TIGHT, "engine": {**TIGHT["engine"], "non_kv_memory_gib": 5.0}}
    sim = sim_mod.Simulator(experiment_from_dict(raw), "fresh")
    assert sim.sched.kv is None and sim.plannable()
    res = sim.run()
    assert res.extra.num_preemptions == 0 and res.extra.kv_cache_peak_pct is None
    assert res.extra.kv_cache_tokens > 300 * 1000


def test_a_cache_that_cannot_hold_one_request_is_one_line_exit_2(tmp_path):
    p = tmp_path / "e.toml"
    # a model whose configured context is unknown: no max_model_len to check first
    p.write_text('[model]\nmax_position_embeddings = 0\n[hardware]\npreset = "h200"\n[engine]\ntp = 8\n'
                 '[workload]\ninput_len = 2000000\noutput_len = 100\nnum_prompts = 2\n')
    res = CliRunner().invoke(app, ["simulate", str(p)])
    assert res.exit_code == 2, res.output
    assert "engine.gpu_memory_utilization: expected a KV cache that holds one request" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_a_request_longer_than_max_model_len_is_one_line_exit_2(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[hardware]\npreset = "h200"\n[engine]\ntp = 8\nmax_model_len = 4096\n'
                 '[workload]\ninput_len = 4000\noutput_len = 100\nnum_prompts = 2\n')
    res = CliRunner().invoke(app, ["simulate", str(p)])
    assert res.exit_code == 2, res.output
    assert ("workload.input_len: expected prompt + output tokens within max_model_len = 4,096"
            in res.output and "4,000 + 100" in res.output)
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    # drawn lengths are checked request by request: a lognormal tail past the limit too
    p.write_text('[hardware]\npreset = "h200"\n[engine]\ntp = 8\nmax_model_len = 4096\n'
                 '[workload]\ninput_len = 1000\noutput_len = 100\nnum_prompts = 400\n'
                 'input_len_distribution = "lognormal"\ninput_len_spread = 1.5\n')
    res = CliRunner().invoke(app, ["simulate", str(p)])
    assert res.exit_code == 2 and "workload.input_len" in res.output, res.output


def test_the_shipped_high_concurrency_experiments_say_whether_the_cache_holds_them():
    from pathlib import Path

    from mtpsim.spec import load_experiment

    here = Path(__file__).resolve().parents[1] / "experiments" / "high-concurrency"
    long = load_experiment(here / "h200-tp8-long-prompts.toml", ["workload.num_prompts=400"])
    res = sim_mod.simulate(long, "fresh")
    assert res.extra.num_preemptions > 0 and res.extra.kv_cache_peak_pct == 100.0
    assert res.extra.median_queue_ms > 0
    sharegpt = load_experiment(here / "h200-tp8-sharegpt.toml")
    sim = sim_mod.Simulator(sharegpt, "no_mtp")
    assert sim.sched.kv is None  # 1,000 ShareGPT-like requests fit: nothing to preempt
