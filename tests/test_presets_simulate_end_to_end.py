"""Every model x GPU preset pair that fits simulates end to end with sane figures."""

import pytest

from mtpsim.sim.simulator import simulate
from mtpsim.spec import experiment_from_dict


@pytest.mark.parametrize("model, gpu, quant, tp", [
    ("deepseek-v3.2", "h200", "fp8", 8),
    ("deepseek-v3.2", "b200", "nvfp4", 4),
    ("glm-5.2", "h200", "fp8", 8),
    ("glm-5.2", "b200", "nvfp4", 4),
])
def test_preset_pairs_produce_plausible_results(model, gpu, quant, tp):
    exp = experiment_from_dict({
        "model": {"preset": model, "quantization": quant}, "hardware": {"preset": gpu},
        "engine": {"tp": tp, "max_num_seqs": 8},
        "workload": {"num_prompts": 8, "input_len": 4000, "output_len": 64,
                     "max_concurrency": 8}})
    fresh, share = simulate(exp, "fresh"), simulate(exp, "share")
    for r in (fresh, share):
        assert r.metrics["completed"] == 8
        assert 1 < r.metrics["median_tpot_ms"] < 200
    assert fresh.phases["draft_decode_indexer"] > 0 == share.phases["draft_decode_indexer"]
    assert share.extra.step_saving_vs_fresh_s > 0


def test_glm_shared_indexer_layers_make_long_prompts_cheaper():
    def ttft_ms(indexer_layers: int, prompt: int) -> float:
        exp = experiment_from_dict({"model": {"preset": "glm-5.2",
                                              "num_indexer_layers": indexer_layers},
                                    "hardware": {"preset": "h200"}, "engine": {"tp": 8},
                                    "acceptance": {"mode": "expected"},
                                    "workload": {"num_prompts": 1, "input_len": prompt,
                                                 "output_len": 2}})
        return simulate(exp, "fresh").metrics["median_ttft_ms"]

    # GLM-5.2 runs the indexer in 21 of 78 layers ("shared" layers reuse the top-k). vLLM 0.33.0
    # shards the prefill indexer's rows over the TP ranks (sparse_attn_indexer.PrefillRowShard),
    # so at TP8 the indexer is a few percent of a long prefill, but it is the quadratic part:
    # the saving of 57 indexer-free layers must grow faster than the prompt.
    saving = {}
    for prompt in (30_000, 60_000):
        shared, full = ttft_ms(21, prompt), ttft_ms(78, prompt)
        assert shared < full
        saving[prompt] = (full - shared) / full
    assert saving[60_000] > 1.15 * saving[30_000]
