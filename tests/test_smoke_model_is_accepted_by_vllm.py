"""The smoke run's `vllm serve` command line, parsed by vLLM 0.33.0's own parser, builds a full
engine config (vLLM's DeepSeek-V3.2 config class, the DSA + MTP draft architecture, dummy
weights, one GPU); the folder's tokenizer loads through vLLM; and the CUDA and the generic
DeepSeek-V3.2 classes, target and MTP, are constructed on the meta device with the plugin's
hook points present. On the CPU platform (vLLM refuses sparse attention there, so the attention
backend is XPU's sparse MLA, the generic route; no kernel runs), in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("vllm.entrypoints.cli.serve")

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    folder = tmp_path_factory.mktemp("smoke") / "smoke-model"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), "tests"]),
           "CUDA_VISIBLE_DEVICES": ""}
    res = subprocess.run([sys.executable, "tests/_smoke_vllm_probe.py", str(folder)], env=env,
                         capture_output=True, text=True, timeout=900, check=False)
    line = next((x for x in res.stdout.splitlines() if x.startswith("SMOKE-PROBE ")), None)
    assert res.returncode == 0 and line, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(line.removeprefix("SMOKE-PROBE "))


def test_the_smoke_argv_asks_for_dummy_weights_on_one_gpu(probe):
    assert (probe["load_format"], probe["tp"], probe["enforce_eager"]) == ("dummy", 1, True)
    assert probe["max_model_len"] == 2816  # 2560 in + 64 out + 3 + 1, rounded up to 256
    assert probe["spec"] == ["mtp", 3]
    argv = probe["argv"]
    assert json.loads(argv[argv.index("--speculative-config") + 1])[
        "index_share_for_mtp_iteration"] is True


def test_vllms_deepseek_v32_config_class_takes_the_shrunken_config(probe):
    assert probe["config_class_is_vllms"] is True
    assert probe["architectures"] == ["DeepseekV32ForCausalLM"]
    assert probe["draft_architectures"] == ["DeepseekV32MTPModel"]
    assert probe["hf"] == {"index_topk": 2048, "index_n_heads": 64, "index_head_dim": 128,
                           "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                           "num_nextn_predict_layers": 1}


def test_the_folders_byte_tokenizer_loads_through_vllm(probe):
    assert probe["tokens"] == [68, 83, 65] and probe["vocab"] == 256


@pytest.mark.parametrize("kind", ["cuda", "generic"])
def test_the_models_build_on_the_meta_device_with_the_plugins_hook_points(probe, kind):
    target, mtp = probe["models"][f"{kind} target"], probe["models"][f"{kind} mtp"]
    assert target["meta"] and mtp["meta"]
    assert target["sparse_layers"] == 3  # num_hidden_layers, each with its indexer
    assert mtp["sparse_layers"] == 1  # the MTP layer's own indexer: what the plugin hooks
    assert mtp["share_hooks"] is True  # set_skip_topk / compact_topk_indices
    assert 0 < mtp["params"] < target["params"] < 200_000_000  # small enough for any GPU


def test_only_the_generic_mtp_class_carries_support_torch_compile(probe):
    cuda, generic = probe["models"]["cuda mtp"], probe["models"]["generic mtp"]
    assert cuda["support_torch_compile"] is False and generic["support_torch_compile"] is True
    # The CUDA MTP model is never compiled, so under -O3 the plugin's hooks still count.
    assert cuda["traced_under_o3"] is False
