"""Same seed, same result; another seed, other draws; policies share the workload's draws."""

from mtpsim.sim.simulator import simulate
from mtpsim.spec import experiment_from_dict

RAW = {"engine": {"tp": 8, "max_num_seqs": 8}, "seed": 11,
       "workload": {"num_prompts": 20, "input_len": 4000, "output_len": 80, "max_concurrency": 8,
                    "output_len_distribution": "uniform", "output_len_spread": 0.5}}


def metrics(raw: dict, policy: str = "fresh") -> dict:
    return simulate(experiment_from_dict(raw), policy).to_json()


def test_same_seed_gives_an_identical_result():
    assert metrics(RAW) == metrics(RAW)


def test_another_seed_draws_other_acceptances():
    a = metrics(RAW)
    b = metrics({**RAW, "seed": 12})
    assert a["spec_decode_accepted_tokens"] != b["spec_decode_accepted_tokens"]


def test_expected_mode_does_not_depend_on_the_seed_for_fixed_lengths():
    raw = {**RAW, "acceptance": {"mode": "expected"},
           "workload": {**RAW["workload"], "output_len_distribution": "fixed"}}
    a, b = metrics(raw), metrics({**raw, "seed": 99})
    assert a["output_throughput"] == b["output_throughput"]
    assert a["spec_decode_num_drafts"] == b["spec_decode_num_drafts"]


def test_policies_see_the_same_requests():
    a = simulate(experiment_from_dict(RAW), "fresh")
    b = simulate(experiment_from_dict(RAW), "share")
    assert [r.output_len for r in a.requests] == [r.output_len for r in b.requests]
    assert a.metrics["total_output_tokens"] == b.metrics["total_output_tokens"]
