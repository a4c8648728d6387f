"""The mla family (mtpsim/models/families/mla.py, preset `deepseek-v3`: DeepSeek-V3/R1) is MLA
with dense attention: no lightning indexer on any layer or on the MTP layer, no index_* fields
needed, and a decode step's attention grows linearly with context past any top-k (DeepSeek-V3.2's
2,048 caps it). A model family that does not exist is a one-line error with exit 2."""

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.errors import SpecError
from mtpsim.models.cost import StepShape
from mtpsim.models.families import family_of
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict

ROOT = Path(__file__).resolve().parents[1]
ATTN = "dense MLA attention (MHA prefill)"


def _exp(preset: str = "deepseek-v3", k: int = 0, **model):
    return experiment_from_dict({
        "model": {"preset": preset, **model}, "hardware": {"preset": "h200"},
        "engine": {"tp": 8}, "speculative": {"num_speculative_tokens": k}, "policies": ["fresh"]})


def _verify(exp, ctx: float, n: int = 32) -> float:
    keys = n * min(ctx, exp.index_topk)
    return float(CostModel(exp, "fresh").step(StepShape(
        num_decode=n, decode_ctx=n * ctx, decode_keys=keys))["verify"])


def test_layers_have_no_indexer_and_the_stack_counts_deepseek_v3():
    m = _exp().model
    st = family_of(m).stack(m)
    assert (st.layers, st.mla, st.indexer, st.dense, st.moe, st.linear) == (61, 61, 0, 3, 58, 0)
    assert not family_of(m).mtp_layer(m).indexer
    assert (m.index_topk, m.num_indexer_layers, m.index_n_heads) == (0, 0, 0)


def test_kv_cache_is_the_bf16_latent_only_and_the_mtp_layer_adds_one_more():
    assert CostModel(_exp(), "fresh").kv_bytes_per_token() == 61 * (512 + 64) * 2
    assert CostModel(_exp(k=1), "fresh").kv_bytes_per_token() == 62 * (512 + 64) * 2
    v32 = CostModel(_exp("deepseek-v3.2", k=1), "fresh").kv_bytes_per_token()
    assert v32 == 62 * ((512 + 64) * 2 + 132)  # the DSA model keeps its indexer keys


def test_decode_attention_grows_linearly_with_context_without_a_topk_cap():
    exp = _exp()
    t = {c: _verify(exp, c) for c in (4096, 8192, 16384, 65536)}
    step = t[8192] - t[4096]
    assert step > 0
    assert t[16384] - t[8192] == pytest.approx(2 * step, rel=1e-9)
    assert t[65536] - t[16384] == pytest.approx(12 * step, rel=1e-9)
    # DeepSeek-V3.2 reads at most 2,048 latent entries per query: far past top-k its attention
    # stops growing, only its indexer does (at 132 B / token against 1,152 B of dense latent)
    v32 = _exp("deepseek-v3.2")
    assert _verify(v32, 65536) - _verify(v32, 16384) < 0.25 * (t[65536] - t[16384])


def test_prefill_attention_is_quadratic_in_the_chunk_and_prices_no_indexer():
    cm = CostModel(_exp(), "fresh")
    near, far = cm.prefill_parts(4096, 0), cm.prefill_parts(4096, 28672)
    assert far[ATTN] > 5 * near[ATTN] > 0  # 4,096 x 32,768 pairs against 4,096^2 / 2
    assert near["indexer logits (q·k over all earlier keys)"] == 0.0
    assert near["top-k selection"] == 0.0


def test_a_dsa_family_still_needs_its_indexer_fields():
    with pytest.raises(SpecError, match="index_topk"):
        _exp("deepseek-v3.2", index_topk=0)
    _exp(family="mla", preset="deepseek-v3.2")  # DSA fields present and unused: accepted


def test_an_unknown_family_exits_2_with_one_line(tmp_path):
    f = tmp_path / "x.toml"
    f.write_text('[model]\npreset = "deepseek-v3"\nfamily = "gqa"\n[hardware]\npreset = "h200"\n'
                 "[engine]\ntp = 8\n")
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", str(f), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "model.family" in lines[0] and "mla" in lines[0], r.stderr
