"""Advancing an unchanged batch many steps at once gives what stepping one at a time gives, in
far fewer Python iterations."""

import pytest

from mtpsim.sim import simulator as sim_mod
from mtpsim.spec import experiment_from_dict

RAW = {"engine": {"tp": 8, "max_num_seqs": 8}, "acceptance": {"mode": "expected"}, "seed": 2,
       "workload": {"num_prompts": 16, "input_len": 3000, "output_len": 300, "max_concurrency": 6,
                    "output_len_distribution": "uniform", "output_len_spread": 0.3}}


def test_bulk_and_single_steps_agree(monkeypatch):
    exp = experiment_from_dict(RAW)
    bulk = sim_mod.simulate(exp, "fresh")
    monkeypatch.setattr(sim_mod, "MAX_BULK_STEPS", 1)
    single = sim_mod.simulate(exp, "fresh")
    assert bulk.extra["num_steps"] == single.extra["num_steps"]
    assert bulk.metrics["spec_decode_num_drafts"] == single.metrics["spec_decode_num_drafts"]
    for key in ("duration", "median_tpot_ms", "median_ttft_ms", "p90_e2el_ms", "mean_itl_ms"):
        assert bulk.metrics[key] == pytest.approx(single.metrics[key], rel=1e-9)
    assert bulk.extra["python_iterations"] * 5 < single.extra["python_iterations"]


def test_python_iterations_scale_with_requests_not_tokens():
    short = sim_mod.simulate(experiment_from_dict(RAW), "fresh")
    raw = {**RAW, "workload": {**RAW["workload"], "output_len": 3000}}
    long = sim_mod.simulate(experiment_from_dict(raw), "fresh")
    assert long.extra["num_steps"] > 5 * short.extra["num_steps"]
    assert long.extra["python_iterations"] < 2 * short.extra["python_iterations"] + 20
