"""The hybrid_linear_dsa family (mtpsim/models/families/hybrid_linear_dsa.py, preset
`hybrid-linear-dsa`) is priced by its layer list: linear-attention layers hold no KV cache, run
no indexer and cost the same at any context; only its MLA + DSA layers grow with context."""

import numpy as np
import pytest

from mtpsim.errors import SpecError
from mtpsim.models.cost import StepShape
from mtpsim.models.families import family_of
from mtpsim.models.families.layers import LINEAR, MLA
from mtpsim.models.memory import kv_cache_size
from mtpsim.models.roofline import CostModel, mla_bytes_per_token
from mtpsim.sim.simulator import simulate
from mtpsim.spec import experiment_from_dict

LINEAR_PART = "linear attention (projections, chunked state update)"


def _exp(**model):
    return experiment_from_dict({
        "model": {"preset": "hybrid-linear-dsa", **model}, "hardware": {"preset": "h200"},
        "engine": {"tp": 2, "max_num_seqs": 8},
        "workload": {"num_prompts": 8, "input_len": 4000, "output_len": 64, "max_concurrency": 8}})


def _decode(cm: CostModel, ctx: float, n: int = 8) -> dict[str, float]:
    keys = n * min(ctx, 2048.0)
    return {p: float(v) for p, v in cm.step(StepShape(
        num_decode=n, decode_ctx=n * ctx, decode_keys=keys, num_draft=n, draft_ctx=n * (ctx + 1),
        draft_keys=keys)).items()}


def test_the_layer_list_is_kimi_linears_pattern_with_dsa_on_the_mla_layers():
    m = _exp().model
    layers = family_of(m).layers(m)
    assert len(layers) == 27
    mla = [i + 1 for i, x in enumerate(layers) if x.mixer == MLA]
    assert mla == [4, 8, 12, 16, 20, 24, 27]
    assert all(x.indexer for x in layers if x.mixer == MLA)
    assert not any(x.indexer for x in layers if x.mixer == LINEAR)
    assert [x.ffn for x in layers[:2]] == ["dense", "moe"]


def test_only_mla_layers_hold_kv_and_indexer_keys_and_linear_layers_hold_a_fixed_state():
    exp = _exp()
    cm = CostModel(exp, "fresh")
    m = exp.model
    assert cm.kv_bytes_per_token() == (7 + 1) * (mla_bytes_per_token(exp) + m.indexer_bytes_per_token)
    # 20 layers x 32 heads x 128 x 128 fp32 (+ conv inputs) over TP2, one slot per verified token
    per_layer = 32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * 2
    assert cm.state_bytes_per_request() == 20 * per_layer / 2 * (exp.k + 1)
    assert kv_cache_size(exp).states == 8 * cm.state_bytes_per_request()
    ds = experiment_from_dict({"hardware": {"preset": "h200"}, "engine": {"tp": 8}})
    assert CostModel(ds, "fresh").state_bytes_per_request() == 0.0
    assert kv_cache_size(ds).states == 0.0


def test_a_linear_attention_layer_costs_the_same_at_any_context():
    cm = CostModel(_exp(), "fresh")
    near, far = cm.prefill_parts(2048, 0), cm.prefill_parts(2048, 200_000)
    assert near[LINEAR_PART] == far[LINEAR_PART] > 0
    assert far["indexer logits (q·k over all earlier keys)"] > 10 * near[
        "indexer logits (q·k over all earlier keys)"]
    dsa = CostModel(experiment_from_dict({"hardware": {"preset": "h200"}, "engine": {"tp": 8}}),
                    "fresh")
    assert LINEAR_PART not in dsa.prefill_parts(2048, 0)


def test_decode_cost_grows_with_context_by_the_mla_layer_count_not_the_layer_count():
    def growth(**model) -> float:
        cm = CostModel(_exp(**model), "fresh")
        return _decode(cm, 120_000)["verify"] - _decode(cm, 1_000)["verify"]

    # every 4th layer MLA (7 of 27) vs every 9th (3 of 27: 9, 18, 27): same layers, other mix
    g7, g3 = growth(), growth(full_attention_period=9, num_indexer_layers=3)
    assert g7 > 0 and g3 > 0
    assert g7 / g3 == pytest.approx(7 / 3, rel=1e-6)


def test_the_indexer_is_priced_on_the_dsa_layers_only():
    hybrid = CostModel(_exp(), "fresh").prefill_parts(4096, 4096)
    every = CostModel(_exp(family="dsa_mla", num_indexer_layers=27), "fresh").prefill_parts(4096, 4096)
    key = "indexer logits (q·k over all earlier keys)"
    assert hybrid[key] / every[key] == pytest.approx(7 / 27, rel=1e-6)
    assert LINEAR_PART not in every


def test_the_hybrid_simulates_and_sharing_skips_its_draft_indexer():
    exp = _exp()
    fresh, share = simulate(exp, "fresh"), simulate(exp, "share")
    for r in (fresh, share):
        assert r.metrics["completed"] == 8
        assert 0.5 < r.metrics["median_tpot_ms"] < 200
    assert fresh.phases["draft_decode_indexer"] > 0 == share.phases["draft_decode_indexer"]
    assert np.isfinite(share.extra.step_saving_vs_fresh_s)


@pytest.mark.parametrize("override, field", [
    ({"num_indexer_layers": 27}, "model.num_indexer_layers"),
    ({"linear_num_heads": 0}, "model.linear_num_heads"),
    ({"full_attention_period": 0}, "model.full_attention_period"),
    ({"family": "mamba"}, "model.family"),
])
def test_a_spec_the_family_cannot_build_names_the_field(override, field):
    with pytest.raises(SpecError, match=field):
        _exp(**override)
