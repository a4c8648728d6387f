"""`engine.scheduler = "reference"` schedules as mtpsim's reference runner does: no token
budget, every admitted prompt prefilled whole in one step; "vllm" chunks prompts under the
token budget."""

from mtpsim.sim.simulator import simulate
from mtpsim.spec import experiment_from_dict

# The same model under both schedulers (a reference-scheduler spec would default to the
# reference model), so only the step formation differs.
RAW = {"policies": ["fresh"], "model": {"preset": "deepseek-v3.2"},
       "engine": {"tp": 8, "max_num_seqs": 8, "max_num_batched_tokens": 8192},
       "workload": {"num_prompts": 4, "input_len": 20000, "output_len": 50, "max_concurrency": 4}}


def first_tokens(scheduler: str) -> list[float]:
    raw = {**RAW, "engine": {**RAW["engine"], "scheduler": scheduler}}
    res = simulate(experiment_from_dict(raw), "fresh")
    return sorted(r.first_token_s for r in res.requests)


def test_reference_scheduler_prefills_all_admitted_prompts_in_one_step():
    t = first_tokens("reference")
    assert max(t) == min(t)


def test_vllm_scheduler_chunks_prompts_under_the_token_budget():
    t = first_tokens("vllm")
    assert len(set(t)) == 4  # 20,000-token prompts over an 8,192-token budget finish one by one
