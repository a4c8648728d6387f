"""Experiment loading: presets fill the model and GPU, the experiment and `--set` override them
field by field, and the shipped experiment validates."""

from pathlib import Path

import pytest

from mtpsim.spec import available_presets, experiment_from_dict, load_experiment, parse_override

ROOT = Path(__file__).resolve().parents[1]


def test_presets_ship_as_data_files():
    assert available_presets("models") == ["deepseek-v3", "deepseek-v3.2", "glm-5.2",
                                           "hybrid-linear-dsa", "reference"]
    assert available_presets("gpus") == ["b200", "b300", "gb200", "gb300", "h100", "h20", "h200",
                                         "mi300x", "mi355x"]


def test_model_and_gpu_presets_fill_every_field():
    exp = experiment_from_dict({"model": {"preset": "glm-5.2"}, "hardware": {"preset": "h200"}})
    assert (exp.model.num_layers, exp.model.hidden_size, exp.model.index_n_heads) == (78, 6144, 32)
    assert exp.model.num_indexer_layers == 21
    assert (exp.hardware.hbm_tbps, exp.hardware.fp4_tflops) == (4.8, 0)


def test_experiment_overrides_a_preset_field_and_keeps_the_rest():
    exp = experiment_from_dict({"model": {"num_layers": 30, "num_indexer_layers": 30},
                                "hardware": {"hbm_tbps": 9.5}})
    assert exp.model.num_layers == 30
    assert exp.model.hidden_size == 7168
    assert exp.hardware.hbm_tbps == 9.5 and exp.hardware.bf16_tflops == 2250


def test_set_overrides_beat_the_experiment_file(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text("seed = 1\n[workload]\nnum_prompts = 10\nrequest_rate = 2.0\n")
    exp = load_experiment(p, ["workload.num_prompts=20", "workload.request_rate=inf",
                              "seed=7", 'policies=["share", "fresh"]', "model.name=my/model"])
    assert exp.workload.num_prompts == 20
    assert exp.workload.request_rate == float("inf")
    assert exp.seed == 7 and exp.policies == ("share", "fresh")
    assert exp.model.name == "my/model"
    assert exp.overrides[0] == "workload.num_prompts=20"


def test_override_values_are_read_as_toml_else_as_strings():
    assert parse_override("a.b=3") == (["a", "b"], 3)
    assert parse_override("a.b=[0.5, 0.25]") == (["a", "b"], [0.5, 0.25])
    assert parse_override("a.b=true") == (["a", "b"], True)
    assert parse_override("a.b=cuda") == (["a", "b"], "cuda")


def test_speculative_topk_defaults_to_the_models():
    assert experiment_from_dict({}).index_topk == 2048
    assert experiment_from_dict({"speculative": {"index_topk": 512}}).index_topk == 512


def test_conditional_acceptance_is_converted_to_marginal():
    exp = experiment_from_dict({"acceptance": {"per_position": [0.8, 0.5, 0.5],
                                               "kind": "conditional"}})
    assert exp.marginal_rates() == pytest.approx([0.8, 0.4, 0.2])


def test_reference_and_vllm_sections_validate_their_fields():
    exp = experiment_from_dict({"reference": {"device": "cpu", "threads": 2},
                                "vllm": {"extra_args": ["--enforce-eager"],
                                         "env": {"VLLM_LOGGING_LEVEL": "DEBUG"}, "port": 0}})
    assert exp.reference.device == "cpu" and exp.reference.weights == "builtin"
    assert exp.vllm.extra_args == ("--enforce-eager",)
    assert exp.vllm.env == {"VLLM_LOGGING_LEVEL": "DEBUG"}


def test_the_pr47352_experiment_loads_with_its_measured_rows():
    exp = load_experiment(ROOT / "experiments" / "pr47352.toml")
    assert exp.engine.tp == 4 and exp.model.quantization == "nvfp4"
    assert exp.hardware.name == "B200" and exp.k == 3
    assert exp.workload.max_concurrency == 32 and exp.workload.request_rate == float("inf")
    assert exp.calibration.measured["fresh"]["output_throughput"] == 1629.90
    assert exp.to_dict()["workload"]["request_rate"] == "inf"


def test_a_smaller_k_uses_the_first_k_measured_positions():
    exp = experiment_from_dict({"speculative": {"num_speculative_tokens": 2}})
    assert exp.marginal_rates() == pytest.approx([0.8745, 0.6010])
