"""The memory model against figures worked by hand from DeepSeek-V3.2's config.json and vLLM
0.33.0's loading and KV-cache code (docs/hardware.md, "Memory"): weights per GPU, KV bytes per
token in each cache dtype, blocks, and vLLM's start-up refusal when one max_model_len request
does not fit."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mtpsim.errors import SpecError
from mtpsim.models.memory import check_fits, kv_cache_size
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict
from mtpsim.vllm_runner.argv import vllm_serve_argv

GIB = 2**30
SCALE = 1 + 4 / (128 * 128)  # fp8 weights' fp32 scale per 128 x 128 block


def _exp(gpu: str = "h200", k: int = 0, quant: str = "fp8", **engine):
    return experiment_from_dict({"model": {"preset": "deepseek-v3.2", "quantization": quant,
                                           "name": "deepseek-ai/DeepSeek-V3.2"},
                                 "hardware": {"preset": gpu},
                                 "engine": {"tp": 8, **engine},
                                 "speculative": {"num_speculative_tokens": k},
                                 "workload": {"input_len": 2048, "output_len": 1024}})


def _hand_weights_tp8_fp8_no_mtp() -> float:
    """config.json of deepseek-ai/DeepSeek-V3.2, TP8, fp8, no MTP layer, bytes on one GPU."""
    h, layers, moe_layers, dense_layers = 7168, 61, 58, 3
    attn_replicated = h * 1536 + h * (512 + 64)                    # q_a_proj, kv_a_proj_with_mqa
    attn_sharded = 1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * h  # q_b, kv_b, o_proj
    absorbed_bf16 = 512 * (128 // 8) * (128 + 128) * 2             # W_UK_T + W_UV, bytes
    indexer_fp8 = 1536 * 64 * 128                                   # wq_b
    indexer_bf16 = h * (128 + 64) * 2                               # wk + weights_proj, bytes
    dense = 3 * h * 18432
    experts = (256 + 1) * 3 * h * 2048                              # routed + shared
    router_bf16 = h * 256 * 2
    embed_head_bf16 = 2 * 129280 * h * 2
    fp8 = (layers * (attn_replicated + attn_sharded / 8 + indexer_fp8)
           + dense_layers * dense / 8 + moe_layers * experts / 8)
    return (fp8 * SCALE + layers * (absorbed_bf16 + indexer_bf16) + moe_layers * router_bf16
            + embed_head_bf16 / 8)


def test_weights_per_gpu_are_the_hand_sum_and_the_model_is_671b():
    got = CostModel(_exp(), "fresh").weight_bytes_per_gpu()
    assert got == pytest.approx(_hand_weights_tp8_fp8_no_mtp(), rel=1e-12)
    # ~80.4 GiB; a public DeepSeek-R1 TP8 load reports 79.41 GiB per device (docs/hardware.md)
    assert 79.0 * GIB < got < 81.5 * GIB
    one = CostModel(experiment_from_dict({"model": {"preset": "deepseek-v3.2", "quantization": "bf16"},
                                          "engine": {"tp": 1}, "speculative": {"num_speculative_tokens": 0}}),
                    "fresh")
    # at bf16 and TP1 the weights are 2 bytes a parameter (plus the bf16 W_UK_T/W_UV copies):
    # DeepSeek's 671B main-model parameters
    absorbed = 61 * 512 * 128 * 256 * 2
    assert (one.weight_bytes_per_gpu() - absorbed) / 2 == pytest.approx(671.9e9, rel=1e-3)


def test_kv_bytes_per_token_follow_the_cache_dtype_vllm_resolves():
    # deepseek-ai's FP8 checkpoint declares no KV scheme: auto is a bf16 latent, (512 + 64) x 2
    assert CostModel(_exp(), "fresh").kv_bytes_per_token() == 61 * 1152 + 61 * 132 == 78_324
    # k > 0 adds the MTP layer's latent and indexer key
    assert CostModel(_exp(k=3), "fresh").kv_bytes_per_token() == 62 * (1152 + 132)
    # --kv-cache-dtype fp8: the fp8_ds_mla record, 512 fp8 + 4 fp32 scales + 64 bf16 RoPE
    fp8 = CostModel(_exp(kv_cache_dtype="fp8"), "fresh")
    assert fp8.kv_bytes_per_token() == 61 * (512 + 16 + 128) + 61 * 132 == 48_068
    # the 4-bit checkpoints are taken to declare an FP8 KV cache
    assert CostModel(_exp("b200", quant="nvfp4"), "fresh").kv_bytes_per_token() == 48_068


def test_a_bf16_cache_makes_decode_attention_read_more():
    keys = 256 * 2048.0  # 256 queries, each reading its top-2048 latents, per layer
    cm = CostModel(_exp(), "fresh")
    bf16 = cm._attention(61, keys, 256)
    assert bf16 == pytest.approx(61 * keys * 1152 / cm._hbm)  # memory-bound on the bf16 bytes
    assert bf16 > CostModel(_exp(kv_cache_dtype="fp8"), "fresh")._attention(61, keys, 256)


def test_blocks_are_the_budget_less_weights_and_reserve_over_the_block_bytes_less_the_null_block():
    exp = _exp("h200")
    kv = kv_cache_size(exp)
    free = 0.9 * 141 * GIB - _hand_weights_tp8_fp8_no_mtp() - 5 * GIB
    assert kv.blocks == int(free // (78_324 * 64)) - 1
    assert 560_000 < kv.tokens < 580_000  # ~41.5 GiB of bf16 latents on each H200


def test_h20_96gb_cannot_start_the_default_max_model_len_and_says_so():
    # 0.9 x 96 GiB - 80.4 GiB of weights - 5 GiB leaves 213 blocks; one 163,840-token request
    # needs 2,560 (11.95 GiB): vLLM refuses to start, and so does mtpsim
    with pytest.raises(SpecError, match=r"engine\.max_model_len: expected a KV cache that holds "
                                        r"one request of max_model_len = 163,840 tokens"):
        check_fits(_exp("h20"))
    assert kv_cache_size(_exp("h20")).blocks == 213
    check_fits(_exp("h20", max_model_len=4096))  # a short context starts


def test_simulate_refuses_it_in_one_line_with_exit_2(tmp_path):
    p = tmp_path / "h20.toml"
    p.write_text('[model]\npreset = "deepseek-v3.2"\n[hardware]\npreset = "h20"\n[engine]\ntp = 8\n'
                 '[speculative]\nnum_speculative_tokens = 0\n')
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", str(p)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "h20.toml" in lines[0] and "engine.max_model_len" in lines[0]


def test_vllm_is_given_the_cache_settings_the_simulator_sized():
    argv = vllm_serve_argv(_exp(max_model_len=32768, kv_cache_dtype="fp8"), "fresh", 8000)
    assert argv[argv.index("--max-model-len") + 1] == "32768"
    assert argv[argv.index("--kv-cache-dtype") + 1] == "fp8"
    plain = vllm_serve_argv(_exp(), "fresh", 8000)
    assert "--max-model-len" not in plain and "--kv-cache-dtype" not in plain


def test_an_unknown_kv_cache_dtype_is_one_line_exit_2(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text('[engine]\nkv_cache_dtype = "fp4"\n')
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", str(p)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "bad.toml" in r.stderr and "engine.kv_cache_dtype" in r.stderr and "'fp8'" in r.stderr
