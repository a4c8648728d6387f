"""DeepGEMM's -inf fill of the indexer's logits (`engine.indexer_clean_logits`; docs/prefill.md,
"The indexer's logits fill").

vLLM before PR #33568 (0.13.0's utils/deep_gemm.py: `clean_logits=True`) had DeepGEMM's
smxx_clean_logits write -inf (fp32) into every column of each logits row outside its keys: a
decode row is max_model_len wide, a prompt row as wide as the step's prompt keys. One warp per
row, 8 warps per SM; the fill takes at least its busiest warp's rows at `clean_row_gbps`.
"""

import numpy as np
import pytest

from mtpsim.errors import UserError
from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict

LAYERS = 61  # DeepSeek-V3.2: an indexer in every layer
MAX_LEN = 163840  # the preset's max_position_embeddings, vLLM's default max_model_len


def model(clean: bool, k: int = 0, max_len: int = 0, preset: str = "deepseek-v3.2",
          gbps: float = 16.0) -> CostModel:
    return CostModel(experiment_from_dict({
        "model": {"preset": preset}, "hardware": {"preset": "h200"},
        "engine": {"tp": 8, "indexer_clean_logits": clean, "max_model_len": max_len,
                   "indexer_row_sharding": False},  # as in the vLLM versions that filled
        "calibration": {"clean_row_gbps": gbps},
        "speculative": {"num_speculative_tokens": k}}), "fresh")


def decode(b: int, ctx: float = 400.0) -> StepShape:
    return StepShape(num_decode=b, decode_ctx=b * ctx, decode_keys=b * ctx, num_draft=b,
                     draft_ctx=b * ctx, draft_keys=b * ctx)


def extra(phase: str, s: StepShape, **kw) -> float:
    return float(model(True, **kw).step(s)[phase] - model(False, **kw).step(s)[phase])


def test_off_by_default_and_then_nothing_moves():
    cm = CostModel(experiment_from_dict({"hardware": {"preset": "h200"}, "engine": {"tp": 8}}),
                   "fresh")
    assert not cm.exp.engine.indexer_clean_logits
    assert cm.step(decode(1000)) == model(False, k=3).step(decode(1000))


def test_a_large_decode_batch_writes_max_model_len_columns_per_row_at_hbm_rate():
    """1,000 rows: 8 rows per SM, one per warp, so the bytes bind: 61 x 1,000 x (163,840 - 400)
    x 4 B at the HBM rate, plus one kernel per layer."""
    cm = model(True)
    want = LAYERS * (4.0 * 1000 * (MAX_LEN - 400) / cm._hbm + cm._floor_us * 1e-6)
    assert extra("verify", decode(1000)) == pytest.approx(want, rel=1e-9)
    assert 0.008 < want < 0.016  # ~12 ms of a ~140 ms step at the spec's defaults


def test_max_model_len_sets_the_width():
    """The measured 32K row's shorter ITL (78.1 against 82-84 ms) is the direction this gives."""
    full, short = extra("verify", decode(1000)), extra("verify", decode(1000), max_len=32768)
    assert short < full / 4


def test_a_small_batch_pays_one_warps_row_at_the_row_rate():
    """One row: the warp's 655 KB at clean_row_gbps, not the bytes at HBM rate."""
    cm = model(True)
    want = LAYERS * (4.0 * MAX_LEN / 16e9 + cm._floor_us * 1e-6)
    assert extra("verify", decode(1)) == pytest.approx(want, rel=1e-9)
    assert extra("verify", decode(1), gbps=5.0) > 3 * extra("verify", decode(1), gbps=16.0)


def test_prompt_rows_fill_the_steps_prompt_keys_and_mtp_drafts_fill_too():
    p = 1000.0  # one whole 1,000-token prompt beside 100 decodes
    s = StepShape(num_decode=np.array([100]), decode_ctx=np.array([40000.0]),
                  decode_keys=np.array([40000.0]), num_draft=np.array([100]),
                  draft_ctx=np.array([40000.0]), draft_keys=np.array([40000.0]),
                  prefill_tokens=np.array([p]), prefill_keys=np.array([p * (p + 1) / 2]),
                  prefill_pairs=np.array([p * (p + 1) / 2]), prefill_reads=np.array([p]),
                  prefill_done=np.array([1]))
    cm = model(True)
    # 1,000 rows 1,000 keys wide, the causal half scored; 8 rows per SM, one per warp
    want = LAYERS * (max(4.0 * (p * p - p * (p + 1) / 2) / cm._hbm, 4.0 * p / 16e9)
                     + cm._floor_us * 1e-6)
    got = model(True).step(s)["prefill"][0] - model(False).step(s)["prefill"][0]
    assert got == pytest.approx(want, rel=1e-9)
    for phase in ("draft_prefill", "draft_decode_indexer"):  # the MTP layer's own indexer
        on, off = model(True, k=3).step(decode(100)), model(False, k=3).step(decode(100))
        assert float(on[phase]) > float(off[phase])
    assert "indexer logits -inf fill (clean_logits)" in model(True).prefill_parts(4096, 0)
    assert "indexer logits -inf fill (clean_logits)" not in model(False).prefill_parts(4096, 0)


def test_a_dense_mla_model_has_no_indexer_to_fill():
    assert extra("verify", decode(1000), preset="deepseek-v3") == 0.0


def test_its_prior_is_drawn_only_where_the_fill_runs():
    from mtpsim.uncertainty.draws import drawn_priors

    assert "clean_row_gbps" in drawn_priors(model(True).exp)
    assert "clean_row_gbps" not in drawn_priors(model(False).exp)


def test_real_vllm_refuses_the_fill():
    from mtpsim.real.vllm import Vllm

    with pytest.raises(UserError, match="engine.indexer_clean_logits"):
        Vllm().refuse(model(True).exp, ["fresh"])


def test_the_corpus_writes_it_for_vllm_before_pr33568_only():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import public_corpus

    rows = {r["id"]: r for r in public_corpus.load()[0]}
    old = public_corpus.experiment_text(rows["gpustack-h200-vllm-tp8-sharegpt"])
    new = public_corpus.experiment_text(rows["vllm-pr47352-fresh"])
    r1 = public_corpus.experiment_text(rows["gpustack-r1-h200-vllm-tp8-sharegpt"])
    assert "indexer_clean_logits = true" in old
    assert "indexer_clean_logits" not in new and "indexer_clean_logits" not in r1
