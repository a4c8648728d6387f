"""Every spec section rejects unknown keys, wrong types and impossible values with one message
naming the file, the key and what was expected."""

import pytest

from mtpsim.errors import SpecError
from mtpsim.spec import experiment_from_dict, load_experiment


def rejects(raw: dict, key: str, expected: str, overrides: tuple[str, ...] = ()) -> None:
    with pytest.raises(SpecError) as e:
        experiment_from_dict(raw, source="exp.toml", overrides=overrides)
    msg = e.value.message()
    assert key in msg and expected in msg, msg
    assert "\n" not in msg


@pytest.mark.parametrize("raw, key, expected", [
    ({"model": {"hidden": 1}}, "model.hidden", "unknown key"),
    ({"model": {"preset": "gpt-9"}}, "model.preset", "deepseek-v3.2, glm-5.2"),
    ({"model": {"num_layers": "61"}}, "model.num_layers", "expected an integer"),
    ({"model": {"index_topk": 0}}, "model.index_topk", ">= 1"),
    ({"model": {"quantization": "int3"}}, "model.quantization", "'nvfp4'"),
    ({"model": {"num_experts_per_tok": 300}}, "model.num_experts_per_tok", "at most"),
    ({"model": {"num_layers": 30}}, "model.num_indexer_layers", "at most model.num_layers"),
])
def test_model_section(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"hardware": {"hbm_tbps": 0}}, "hardware.hbm_tbps", "> 0"),
    ({"hardware": {"preset": "a100"}}, "hardware.preset", "b200, b300, gb200"),
    ({"hardware": {"preset": "h200"}, "model": {"quantization": "nvfp4"}}, "model.quantization",
     "FP4"),
])
def test_hardware_section(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"engine": {"tp": 3}}, "engine.tp", "divisor of model.num_heads"),
    ({"engine": {"max_num_seqs": 0}}, "engine.max_num_seqs", ">= 1"),
    ({"engine": {"max_num_batched_tokens": 3}}, "engine.max_num_batched_tokens", ">= 1 + "),
    ({"engine": {"enable_chunked_prefill": "yes"}}, "engine.enable_chunked_prefill",
     "true or false"),
    ({"engine": {"cudagraph_mode": "always"}}, "engine.cudagraph_mode", "full_decode_only"),
    ({"engine": {"enable_chunked_prefill": False}, "workload": {"input_len": 10000}},
     "workload.input_len", "chunked prefill is off"),
])
def test_engine_section(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"speculative": {"num_speculative_tokens": -1}}, "speculative.num_speculative_tokens", "[0, 64]"),
    ({"speculative": {"index_topk": 0}}, "speculative.index_topk", "> 0"),
    ({"speculative": {"method": "eagle"}}, "speculative.method", "'mtp'"),
])
def test_speculative_section(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"workload": {"max_concurrency": 0}}, "workload.max_concurrency", ">= 1"),
    ({"workload": {"input_len": -5}}, "workload.input_len", "[1, 1e+07]"),
    ({"workload": {"output_len": 1.5}}, "workload.output_len", "expected an integer"),
    ({"workload": {"request_rate": 0}}, "workload.request_rate", "> 0"),
    ({"workload": {"request_rate": "fast"}}, "workload.request_rate", "a number"),
    ({"workload": {"input_len_distribution": "zipf"}}, "workload.input_len_distribution",
     "'lognormal'"),
    ({"workload": {"input_len_distribution": "uniform", "input_len_spread": 1.5}},
     "workload.input_len_spread", "[0, 1)"),
    ({"workload": {"output_len_distribution": "lognormal", "output_len_spread": 50}},
     "workload.output_len_spread", "log-sigma in [0, 3]"),
    ({"workload": {"temperature": -1.0}}, "workload.temperature", ">= 0"),
])
def test_workload_section(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"policies": ["fresh", "magic"]}, "policies", "share_recent"),
    ({"policies": []}, "policies", "non-empty"),
    ({"policies": ["share", "share"]}, "policies", "distinct"),
])
def test_policies(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"acceptance": {"per_position": [0.9, 0.5]}}, "acceptance.per_position",
     "expected at least 3 rates"),
    ({"acceptance": {"per_position": [0.5, 0.6, 0.1]}}, "acceptance.per_position",
     "non-increasing"),
    ({"acceptance": {"per_position": [1.2, 0.6, 0.1]}}, "acceptance.per_position", "[0, 1]"),
    ({"acceptance": {"mode": "mean"}}, "acceptance.mode", "'expected'"),
    ({"acceptance": {"policy_rates": {"share": [0.9, 0.5]}}}, "acceptance.policy_rates.share",
     "expected at least 3 rates"),
    ({"acceptance": {"critical_entries": 0}}, "acceptance.critical_entries", "> 0"),
])
def test_acceptance_section(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"calibration": {"mem_efficiency": 1.5}}, "calibration.mem_efficiency", "(0, 1]"),
    ({"calibration": {"fit": ["luck"]}}, "calibration.fit", "mem_efficiency"),
    ({"calibration": {"measured": {"share": {"output_throughput": 1.0}}}},
     "calibration.fit_policy", "calibration.measured"),
    ({"calibration": {"measured": {"fresh": {"output_throughput": 1.0}}}},
     "calibration.fit_metrics", "median_tpot_ms"),
])
def test_calibration_section(raw, key, expected):
    rejects(raw, key, expected)


@pytest.mark.parametrize("raw, key, expected", [
    ({"reference": {"device": "tpu"}}, "reference.device", "'cuda'"),
    ({"reference": {"threads": -1}}, "reference.threads", "in [0, 1024]"),
    ({"vllm": {"port": 70000}}, "vllm.port", "[0, 65535]"),
    ({"vllm": {"extra_args": "--x"}}, "vllm.extra_args", "a list of strings"),
    ({"vllm": {"env": {"A": 1}}}, "vllm.env", "a string"),
    ({"vllm": {"startup_timeout_s": 0}}, "vllm.startup_timeout_s", "> 0"),
])
def test_reference_and_vllm_sections(raw, key, expected):
    rejects(raw, key, expected)


def test_top_level_keys():
    rejects({"sead": 1}, "sead", "unknown section")
    rejects({"seed": -1}, "seed", ">= 0")
    rejects({"model": 3}, "model", "expected a table")


def test_a_bad_override_is_blamed_on_the_flag():
    with pytest.raises(SpecError, match=r"^--set: workload.num_prompts: expected"):
        experiment_from_dict({}, source="exp.toml", overrides=["workload.num_prompts=0"])
    with pytest.raises(SpecError, match="section.key=value"):
        experiment_from_dict({}, overrides=["noequals"])


MEASURED = {"calibration": {"measured": {"fresh": {"output_throughput": 1.0,
                                                  "median_tpot_ms": 2.0}}}}


@pytest.mark.parametrize("raw, override, key", [
    ({}, "nosuch.key=1", "nosuch"),
    ({}, "acceptance.policy_rates.luck=[0.5, 0.4, 0.3]", "acceptance.policy_rates.luck"),
    (MEASURED, 'calibration.fit_policy="share"', "calibration.fit_policy"),
    (MEASURED, 'calibration.fit_metrics=["duration"]', "calibration.fit_metrics"),
    (MEASURED, 'calibration.fit=["mem_efficiency", "overhead_ms", "comm_efficiency"]',
     "calibration.fit"),
])
def test_a_bad_override_checked_across_sections_is_blamed_on_the_flag(raw, override, key):
    with pytest.raises(SpecError) as e:
        experiment_from_dict(raw, source="exp.toml", overrides=[override])
    assert e.value.message().startswith(f"--set: {key}: "), e.value.message()


def test_a_bad_preset_value_names_the_experiment_when_the_experiment_set_it():
    rejects({"model": {"num_heads": 0}}, "model.num_heads", ">= 1")


def test_unreadable_files(tmp_path):
    with pytest.raises(SpecError, match="experiment file not found"):
        load_experiment(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[model\n")
    with pytest.raises(SpecError, match="expected valid TOML"):
        load_experiment(bad)
