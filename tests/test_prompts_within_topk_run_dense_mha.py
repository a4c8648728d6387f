"""Prompt attention as vLLM 0.33.0 runs it for DeepSeek-V3.2 (docs/prefill.md, 3 December 2026).

- Through the sparse MLA kernel, FlashMLA's 64-head tiles (csrc/sm90/prefill/sparse/config.h
  B_H = 64; vLLM pads a rank's heads to a multiple of 64, `prefill_padding`, and the fp8 decode
  kernel to 64 or 128): TP8's 16 heads and TP4's 32 cost each GPU what TP2's 64 do.
- A step whose prompt chunks all end within index_topk runs them as dense MHA
  (`_use_dense_mha_prefill`, vLLM PR #47327) at the rank's own heads, and when no decode token
  shares the step the target's indexers skip them (sparse_attn_indexer.py).
- `engine.dense_short_prefill = false` (vLLM before PR #47327) keeps every prompt row sparse.
"""

import numpy as np
import pytest

from mtpsim.errors import UserError
from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict

SPARSE, DENSE = "sparse MLA attention", "dense MHA attention (prompt within top-k)"
INDEXER = ("indexer logits (q·k over all earlier keys)", "top-k selection")


def model(tp: int = 8, dense: bool = True, gpu: str = "h200") -> CostModel:
    return CostModel(experiment_from_dict({
        "hardware": {"preset": gpu},
        "engine": {"tp": tp, "cudagraph_mode": "full_and_piecewise", "dense_short_prefill": dense},
        "speculative": {"num_speculative_tokens": 0}}), "fresh")


@pytest.mark.parametrize("tokens,start", [(2048, 0), (1024, 4096)])
def test_sparse_prompt_rows_cost_the_same_per_gpu_at_tp8_tp4_and_tp2(tokens, start):
    """16 and 32 heads are padded to FlashMLA's 64-head tile: the sparse kernel's time per GPU
    does not fall with TP past 64 heads per rank."""
    parts = [model(tp, dense=False).prefill_parts(tokens, start)[SPARSE] for tp in (8, 4, 2)]
    assert parts[0] == parts[1] == parts[2] > 0


def test_a_prompt_within_topk_runs_dense_mha_at_the_ranks_own_heads():
    on8, off8, on2 = model(8), model(8, dense=False), model(2)
    dense8, dense2 = on8.prefill_parts(2048, 0), on2.prefill_parts(2048, 0)
    assert SPARSE not in dense8 and dense8[DENSE] > 0
    # 16 heads x 2 x (192 + 128) per causal pair against 64 padded heads x 2 x (576 + 512)
    assert dense8[DENSE] < off8.prefill_parts(2048, 0)[SPARSE] / 5
    # no padding: a TP2 rank's 64 heads take 4x the FLOPs of a TP8 rank's 16
    assert dense2[DENSE] == pytest.approx(4 * dense8[DENSE], rel=0.05)
    # alone in its step, the chunk's indexer logits and top-k are skipped
    assert all(dense8[k] == 0 for k in INDEXER)
    assert all(off8.prefill_parts(2048, 0)[k] > 0 for k in INDEXER)


def test_a_chunk_past_topk_keeps_the_sparse_kernel_and_its_indexer():
    on, off = model(8).prefill_parts(2048, 1024), model(8, dense=False).prefill_parts(2048, 1024)
    assert on == off and SPARSE in on


def _step(decodes: int) -> StepShape:
    p = 2048.0  # one whole 2,048-token prompt (positions 0..2047: keys = pairs)
    ctx = decodes * 1000.0
    return StepShape(num_decode=np.array([decodes]), decode_ctx=np.array([ctx]),
                     decode_keys=np.array([ctx]), prefill_tokens=np.array([p]),
                     prefill_keys=np.array([p * (p + 1) / 2]),
                     prefill_pairs=np.array([p * (p + 1) / 2]), prefill_reads=np.array([p]),
                     prefill_done=np.array([1]))


def test_decode_tokens_in_the_step_keep_the_indexer_scoring_the_prompt():
    """With decodes in the step only the attention changes; alone, the indexer work goes too."""
    on, off = model(8), model(8, dense=False)
    saved_attention = (off.prefill_parts(2048, 0)[SPARSE] - on.prefill_parts(2048, 0)[DENSE])
    mixed = off.step(_step(256))["prefill"][0] - on.step(_step(256))["prefill"][0]
    alone = off.step(_step(0))["prefill"][0] - on.step(_step(0))["prefill"][0]
    assert mixed == pytest.approx(saved_attention, rel=1e-6)
    assert alone > saved_attention * 1.01


def test_amd_keeps_the_indexer_and_a_dense_family_is_unchanged():
    mi = model(8, gpu="mi300x").prefill_parts(2048, 0)
    assert DENSE in mi and all(mi[k] > 0 for k in INDEXER)
    r1 = {d: CostModel(experiment_from_dict({
        "model": {"preset": "deepseek-v3"}, "hardware": {"preset": "h200"},
        "engine": {"tp": 8, "dense_short_prefill": d}}), "fresh").prefill_parts(2048, 0)
        for d in (True, False)}
    assert r1[True] == r1[False]


def test_real_vllm_refuses_the_older_sparse_only_prefill():
    from mtpsim.real.vllm import Vllm

    with pytest.raises(UserError, match="engine.dense_short_prefill"):
        Vllm().refuse(model(8, dense=False).exp, ["fresh"])
