"""The fitted cost's features and the reference engine's blocks come from the family's layer
list (mtpsim.models.families), as the roofline's counts do: linear-attention layers add a
per-request state feature to verification, a family without indexer layers has no per-pair
target features, and the engine builds its blocks from its layer list and refuses a kind it
does not implement."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mtpsim.calibration.schema import PhaseFit, read_calibration
from mtpsim.models.cost import StepShape, cost_features
from mtpsim.models.families import Stack, family_of
from mtpsim.models.families.layers import DENSE, LINEAR, MLA, MOE, Layer
from mtpsim.models.fitted import FittedCost
from mtpsim.spec import experiment_from_dict

ROOT = Path(__file__).resolve().parents[1]
SHAPE = StepShape(num_decode=np.array([1.0, 8.0]), decode_ctx=np.array([900.0, 8000.0]),
                  decode_keys=np.array([64.0, 512.0]), num_draft=np.array([1.0, 8.0]),
                  draft_ctx=np.array([901.0, 8008.0]), draft_keys=np.array([64.0, 512.0]))


def _stack(preset: str, **model) -> Stack:
    m = experiment_from_dict({"model": {"preset": preset, **model}}).model
    return family_of(m).stack(m)


def test_a_dsa_mla_stack_gives_the_features_the_reference_engine_was_fitted_on():
    default = cost_features(SHAPE, 3, 64)
    for stack in (_stack("deepseek-v3.2"), _stack("glm-5.2")):
        got = cost_features(SHAPE, 3, 64, stack)
        assert got.keys() == default.keys()
        for phase in default:
            assert got[phase].keys() == default[phase].keys()
            assert all(np.array_equal(got[phase][n], default[phase][n]) for n in default[phase])


def test_linear_attention_layers_add_a_per_request_state_feature_to_verification():
    feats = cost_features(SHAPE, 3, 64, _stack("hybrid-linear-dsa"))
    assert np.array_equal(feats["verify"]["states"], SHAPE.num_decode)
    assert "states" not in cost_features(SHAPE, 3, 64, _stack("deepseek-v3.2"))["verify"]


def test_without_indexer_layers_the_target_phases_have_no_per_pair_features():
    no_dsa = Stack(layers=4, mla=1, linear=3, indexer=0, dense=0, moe=4)
    feats = cost_features(SHAPE, 3, 64, no_dsa)
    assert "pairs" not in feats["prefill"] and "ctx" not in feats["verify"]
    assert "pairs" in feats["draft_prefill"]  # the MTP layer keeps its own indexer


def test_a_fitted_state_coefficient_prices_the_hybrids_decoding_requests_only():
    cal = read_calibration(ROOT / "experiments/heldout/calibration.json")
    v = cal.cost.phases["verify"]
    coef = 2e-5
    with_states = dataclasses.replace(v, features=[*v.features, "states"], coef=[*v.coef, coef])
    assert isinstance(with_states, PhaseFit)
    cal = dataclasses.replace(cal, cost=dataclasses.replace(
        cal.cost, phases={**cal.cost.phases, "verify": with_states}))
    hybrid = FittedCost(cal, "fresh", 3, 64, 1.0, _stack("hybrid-linear-dsa")).step(SHAPE)
    dsa = FittedCost(cal, "fresh", 3, 64, 1.0, _stack("deepseek-v3.2")).step(SHAPE)
    assert np.allclose(hybrid["verify"] - dsa["verify"], coef * SHAPE.num_decode, rtol=1e-12)
    assert np.array_equal(hybrid["prefill"], dsa["prefill"])


def test_the_reference_engine_builds_its_blocks_from_its_layer_list():
    pytest.importorskip("torch")
    from mtpsim.engine.model import ENGINE_LAYER, Block, ModelArgs, Transformer

    args = ModelArgs(vocab_size=16, n_layer=3, dim=32, n_head=2, intermediate_size=64,
                     n_index_head=2, index_head_dim=8, max_seq_len=64)
    assert args.layers() == (ENGINE_LAYER,) * 3 == (Layer(MLA, True, DENSE),) * 3
    assert len(Transformer(args).layers) == 3
    with pytest.raises(ValueError, match="linear"):
        Block(args, Layer(LINEAR, False, MOE))
