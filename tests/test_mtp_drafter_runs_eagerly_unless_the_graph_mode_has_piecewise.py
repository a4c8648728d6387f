"""vLLM 0.33.0 gives the MTP drafter PIECEWISE CUDA graphs only when the cudagraph mode has a mixed
part, else none (v1/spec_decode/llm_base_proposer.py `initialize_cudagraph_keys`): under
`full_decode_only` a decode-only step replays the target's graph but launches the drafter's k
forwards eagerly. The step's eager overhead is paid on the share of its layer forwards launched
outside graphs: the target's num_layers by its mode, the drafter's k x num_mtp_layers by theirs."""

import pytest

from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict

BASE = {"model": {"preset": "deepseek-v3.2", "quantization": "nvfp4"},
        "hardware": {"preset": "b200"},
        "workload": {"num_prompts": 8, "input_len": 1024, "output_len": 64, "max_concurrency": 8}}


def _eager_ms(k: int, mode: str, decodes: int = 8, prompt_tokens: float = 0.0) -> float:
    """Milliseconds of the step's overhead that eager_overhead_ms (2 ms) adds."""
    def overhead(eager_ms: float) -> float:
        exp = experiment_from_dict({**BASE, "engine": {"tp": 4, "cudagraph_mode": mode},
                                    "speculative": {"num_speculative_tokens": k},
                                    "calibration": {"eager_overhead_ms": eager_ms}})
        ctx = decodes * 2000.0
        shape = StepShape(num_decode=decodes, decode_ctx=ctx, decode_keys=ctx, num_draft=decodes,
                          draft_ctx=ctx, draft_keys=ctx, prefill_tokens=prompt_tokens)
        return float(CostModel(exp, "fresh" if k else "no_mtp").step(shape)["overhead"]) * 1e3
    return overhead(2.0) - overhead(0.0)


def test_a_graphed_decode_step_pays_for_the_eager_drafter_under_full_decode_only():
    assert _eager_ms(0, "full_decode_only") == pytest.approx(0.0, abs=1e-12)
    paid = [_eager_ms(k, "full_decode_only") for k in (1, 2, 3)]
    assert 0.0 < paid[0] < paid[1] < paid[2]
    # the drafter's k forwards of one layer among the target's 61: k / (61 + k) of the 2 ms
    assert paid[2] == pytest.approx(2.0 * 3 / 64)


def test_modes_with_a_piecewise_part_graph_the_drafter_piecewise():
    assert _eager_ms(3, "full_and_piecewise") == pytest.approx(_eager_ms(3, "full_decode_only") / 2)
    assert _eager_ms(3, "piecewise") == pytest.approx(1.0)  # everything piecewise: half of 2 ms
    assert _eager_ms(3, "none") == pytest.approx(2.0)


def test_a_step_with_a_prompt_chunk_or_past_the_ceiling_stays_wholly_eager():
    assert _eager_ms(3, "full_decode_only", prompt_tokens=512.0) == pytest.approx(2.0)
    # 512 requests x 4 tokens = 2,048 > B200's 1,024-token ceiling: target and draft step 0 run
    # eagerly, steps 1-2 (512 tokens each) too under full_decode_only
    assert _eager_ms(3, "full_decode_only", decodes=512) == pytest.approx(2.0)
    # under full_and_piecewise draft steps 1-2 fit the ceiling and replay piecewise graphs
    assert _eager_ms(3, "full_and_piecewise", decodes=512) == pytest.approx(2.0 * (61 + 1 + 1) / 64)
