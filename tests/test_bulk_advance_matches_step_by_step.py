"""The simulator's fast paths give what stepping one engine step at a time gives: advancing a
batch many steps at once (until the next event), and drawing every request's decode steps
before scheduling (rate inf), in far fewer Python iterations."""

import pytest

from mtpsim.sim import simulator as sim_mod
from mtpsim.spec import experiment_from_dict

RAW = {"engine": {"tp": 8, "max_num_seqs": 8}, "acceptance": {"mode": "expected"}, "seed": 2,
       "workload": {"num_prompts": 16, "input_len": 3000, "output_len": 300, "max_concurrency": 6,
                    "output_len_distribution": "uniform", "output_len_spread": 0.3}}
KEYS = ("duration", "median_tpot_ms", "median_ttft_ms", "p90_ttft_ms", "p90_e2el_ms",
        "mean_itl_ms")


def agree(a, b) -> None:
    assert a.extra.num_steps == b.extra.num_steps
    assert a.extra.decode_only_steps == b.extra.decode_only_steps
    assert a.metrics["spec_decode_num_drafts"] == b.metrics["spec_decode_num_drafts"]
    for key in KEYS:
        assert a.metrics[key] == pytest.approx(b.metrics[key], rel=1e-9), key
    assert a.extra.phases_total_s == pytest.approx(b.extra.phases_total_s, rel=1e-9)


@pytest.mark.parametrize("raw", [RAW, {**RAW, "workload": {**RAW["workload"],
                                                            "input_len": 9000}}])
def test_bulk_and_single_steps_agree(monkeypatch, raw):
    exp = experiment_from_dict(raw)
    monkeypatch.setattr(sim_mod.Simulator, "plannable", lambda self: False)
    bulk = sim_mod.simulate(exp, "fresh")
    monkeypatch.setattr(sim_mod, "MAX_BULK_STEPS", 1)
    single = sim_mod.simulate(exp, "fresh")
    agree(bulk, single)
    assert single.extra.python_iterations == single.extra.num_steps
    assert bulk.extra.python_iterations * 5 < single.extra.python_iterations


@pytest.mark.parametrize("chunked", [True, False])
def test_drawing_outputs_first_agrees_with_stepping(monkeypatch, chunked):
    """Prompts longer than the token budget (chunked over several steps) beside decodes."""
    raw = {**RAW, "engine": {**RAW["engine"], "max_num_batched_tokens": 2048,
                             "enable_chunked_prefill": chunked},
           "workload": {**RAW["workload"], "input_len": 1500 if not chunked else 5000,
                        "input_len_distribution": "uniform", "input_len_spread": 0.3}}
    exp = experiment_from_dict(raw)
    planned = sim_mod.Simulator(exp, "fresh")
    assert planned.plannable()
    first = planned.run()
    monkeypatch.setattr(sim_mod.Simulator, "plannable", lambda self: False)
    monkeypatch.setattr(sim_mod, "MAX_BULK_STEPS", 1)
    stepped = sim_mod.simulate(exp, "fresh")
    agree(first, stepped)
    # one iteration per event (a finish, or a batch of finishes at one step)
    assert first.extra.python_iterations <= exp.workload.num_prompts + 1
    assert stepped.extra.python_iterations > 20 * first.extra.python_iterations


def test_python_iterations_scale_with_requests_not_tokens():
    short = sim_mod.simulate(experiment_from_dict(RAW), "fresh")
    raw = {**RAW, "workload": {**RAW["workload"], "output_len": 3000}}
    long = sim_mod.simulate(experiment_from_dict(raw), "fresh")
    assert long.extra.num_steps > 5 * short.extra.num_steps
    assert long.extra.python_iterations < 2 * short.extra.python_iterations + 20
