"""FlashMLA's Hopper kernels multiply every top-k slot of a query row unless told the row's valid
length: the DeepSeek-V3.2 FP8 decode kernel always, the BF16 kernel when the engine does not pass
`topk_length` (vLLM before PR #36616: engine.sparse_topk_length = false). A row whose context is
shorter than top-k then costs the FLOPs of the full width (its gathers stay those of its valid
keys); other GPUs keep the valid keys."""

import numpy as np
import pytest

from mtpsim.errors import UserError
from mtpsim.models.build import models_for
from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict

SHORT = "sparse MLA attention"


def experiment(gpu: str = "h200", topk_length: bool = True, kv: str = "auto", tp: int = 8):
    """Prompt rows through the sparse kernel (dense_short_prefill off: vLLM before PR #47327)."""
    return experiment_from_dict({"hardware": {"preset": gpu}, "engine": {
        "tp": tp, "cudagraph_mode": "full_and_piecewise", "sparse_topk_length": topk_length,
        "kv_cache_dtype": kv, "dense_short_prefill": False}, "speculative": {"num_speculative_tokens": 0}})


def decode_ms(exp, context: float, batch: int = 512) -> float:
    keys = batch * min(context, 2048.0)
    dec = StepShape(num_decode=np.array([batch]), decode_ctx=np.array([batch * context]),
                    decode_keys=np.array([keys]))
    return 1e3 * float(models_for(exp, "no_mtp").cost.step(dec)["verify"][0])


def test_short_prompt_rows_cost_the_full_width_without_topk_length():
    """256 prompt tokens from position 0 (1-256 valid keys each): without topk_length the kernel
    multiplies 256 x 2,048 slots, exactly the FLOPs of rows that see 2,048 keys."""
    before = CostModel(experiment(topk_length=False), "fresh")
    after = CostModel(experiment(topk_length=True), "fresh")
    m, exp = before.exp.model, before.exp
    full_flops = before._stack.mla * 256 * exp.index_topk * 64 * 2 * (2 * m.kv_lora_rank
                                                                       + m.qk_rope_head_dim)
    short = before.prefill_parts(256, 0)[SHORT]
    assert short >= full_flops / before._attn_rate * 0.999
    assert short > 10 * after.prefill_parts(256, 0)[SHORT]
    # rows past top-k already had the full width: the flag does not move them
    assert before.prefill_parts(256, 8192)[SHORT] == after.prefill_parts(256, 8192)[SHORT]


def test_decode_rows_at_short_context_cost_more_without_topk_length():
    assert decode_ms(experiment(topk_length=False), 300) > 1.2 * decode_ms(experiment(), 300)
    assert decode_ms(experiment(topk_length=False), 4000) == decode_ms(experiment(), 4000)


def test_the_fp8_decode_kernel_always_runs_the_full_width():
    """An fp8 cache's decode rows go through FlashMLA's V3.2 FP8 decode kernel, which never reads
    a row's length: the flag changes nothing, and a short context costs at least as much compute
    as a long one's FLOPs (its bytes are fewer)."""
    on, off = experiment(kv="fp8"), experiment(kv="fp8", topk_length=False)
    assert decode_ms(on, 300) == decode_ms(off, 300)
    assert decode_ms(on, 300) > 0.9 * decode_ms(on, 2048)


def test_blackwell_keeps_the_valid_keys():
    assert decode_ms(experiment("b200", False), 300) == decode_ms(experiment("b200"), 300)
    before = CostModel(experiment("b200", False), "fresh").prefill_parts(256, 0)[SHORT]
    assert before == CostModel(experiment("b200", True), "fresh").prefill_parts(256, 0)[SHORT]


def test_real_vllm_refuses_what_only_older_vllm_did():
    """vLLM 0.33.0 cannot be made to scan the full width: the setting is the simulator's, for
    public figures of older engines; run-real says so before any server starts."""
    from mtpsim.real.vllm import Vllm

    with pytest.raises(UserError, match="engine.sparse_topk_length"):
        Vllm().refuse(experiment(topk_length=False), ["fresh"])
    Vllm().refuse(experiment_from_dict({"hardware": {"preset": "h200"}}), ["fresh"])
