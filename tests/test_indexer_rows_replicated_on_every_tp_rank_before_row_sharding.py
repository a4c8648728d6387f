"""engine.indexer_row_sharding = false (vLLM before PR #54394): every TP rank scores every prompt
row of the lightning indexer, so a long prompt's prefill pays tp x the indexer's logits and top-k,
and no all-gather of the top-k rows; decode steps are not affected."""

import numpy as np

from mtpsim.models.build import models_for
from mtpsim.models.cost import StepShape
from mtpsim.spec import experiment_from_dict


def step_ms(sharding: bool, shape: StepShape) -> float:
    exp = experiment_from_dict({"hardware": {"preset": "h200"}, "engine": {
        "tp": 8, "cudagraph_mode": "full_and_piecewise", "indexer_row_sharding": sharding},
        "speculative": {"num_speculative_tokens": 0}})
    return 1e3 * float(sum(v[0] for v in models_for(exp, "no_mtp").cost.step(shape).values()))


def test_a_long_prompt_chunk_costs_more_without_row_sharding():
    s, n = 16000, 8192  # a chunk of a 32K prompt
    chunk = StepShape(prefill_tokens=np.array([n]), prefill_keys=np.array([n * 2048.0]),
                      prefill_pairs=np.array([(2 * s + n + 1) * n / 2]),
                      prefill_reads=np.array([s + n]), prefill_done=np.array([0]))
    assert step_ms(False, chunk) > 1.1 * step_ms(True, chunk)


def test_decode_steps_do_not_change():
    dec = StepShape(num_decode=np.array([256]), decode_ctx=np.array([256 * 4000.0]),
                    decode_keys=np.array([256 * 2048.0]), num_draft=np.array([256]),
                    draft_ctx=np.array([256 * 4000.0]), draft_keys=np.array([256 * 2048.0]))
    assert step_ms(False, dec) == step_ms(True, dec)
