"""experiments/smoke-h200.toml is the smoke's own experiment: `--smoke` changes nothing in it
(the file says what --smoke forces), it carries no flag of the 4-GPU PR run, and its server
timeouts fit a 10-minute GPU window; --smoke on the PR's experiment drops that run's flags."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mtpsim.spec import load_experiment
from mtpsim.vllm_runner.smoke import overrides

SMOKE = "experiments/smoke-h200.toml"
MODEL = Path("/tmp/smoke-model")


def _fields(exp) -> dict:
    d = dataclasses.asdict(exp)
    d.pop("source", None)
    d.pop("overrides", None)  # the record of the --set list itself
    return d


def test_smoke_overrides_change_nothing_in_the_smoke_experiment_but_the_model_folder():
    plain = load_experiment(SMOKE, [f'model.name="{MODEL}"'])
    forced = load_experiment(SMOKE, overrides(MODEL))
    assert _fields(plain) == _fields(forced)


def test_smoke_experiment_fits_one_gpu_and_a_ten_minute_window():
    exp = load_experiment(SMOKE, [])
    assert exp.engine.tp == 1 and exp.vllm.extra_args == () and exp.vllm.compilation_mode == 0
    assert exp.model.quantization == "bf16"
    two_servers = 2 * (exp.vllm.startup_timeout_s + exp.vllm.stop_timeout_s)
    assert two_servers < 10 * 60, two_servers
    assert exp.vllm.stop_timeout_s > 30.0  # more than the default grace that cut traces


def test_smoke_on_the_pr_experiment_drops_its_flags_and_long_timeout():
    exp = load_experiment("experiments/pr47352.toml", overrides(MODEL))
    assert exp.vllm.extra_args == () and exp.engine.tp == 1
    assert exp.vllm.startup_timeout_s == load_experiment(SMOKE, []).vllm.startup_timeout_s


def test_smoke_experiment_describes_the_model_vllm_serves():
    import importlib.resources
    import json

    cfg = json.loads(importlib.resources.files("mtpsim.vllm_runner")
                     .joinpath("smoke_model/config.json").read_text(encoding="utf-8"))
    m = load_experiment(SMOKE, []).model
    pairs = {"num_layers": "num_hidden_layers", "num_dense_layers": "first_k_dense_replace",
             "hidden_size": "hidden_size", "num_heads": "num_attention_heads",
             "q_lora_rank": "q_lora_rank", "kv_lora_rank": "kv_lora_rank",
             "qk_nope_head_dim": "qk_nope_head_dim", "qk_rope_head_dim": "qk_rope_head_dim",
             "v_head_dim": "v_head_dim", "intermediate_size": "intermediate_size",
             "moe_intermediate_size": "moe_intermediate_size",
             "num_routed_experts": "n_routed_experts", "num_experts_per_tok": "num_experts_per_tok",
             "num_shared_experts": "n_shared_experts", "vocab_size": "vocab_size",
             "index_n_heads": "index_n_heads", "index_head_dim": "index_head_dim",
             "index_topk": "index_topk", "num_mtp_layers": "num_nextn_predict_layers"}
    assert {f: getattr(m, f) for f in pairs} == {f: cfg[c] for f, c in pairs.items()}
    assert m.num_indexer_layers == m.num_layers
