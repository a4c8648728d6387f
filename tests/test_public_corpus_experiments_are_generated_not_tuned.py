"""experiments/public/ holds exactly what benchmarks/public_corpus.py generates from the corpus
rows (so no experiment is tuned by hand after seeing its prediction), each one loads, and the
scoring counts a figure inside its interval and charges a miss 2/alpha times its distance."""

import importlib.util
import math
from pathlib import Path

import pytest

from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("public_corpus", ROOT / "benchmarks" / "public_corpus.py")
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)
ROWS, SPLIT = pc.load()


@pytest.mark.parametrize("row", [r for r in ROWS if r["expressible"]], ids=lambda r: r["id"])
def test_each_expressible_row_has_its_generated_experiment(row):
    path = pc.EXPERIMENTS / f"{row['id']}.toml"
    assert path.read_text() == pc.experiment_text(row)
    exp = load_experiment(path)
    assert exp.k == row["k"] and (exp.engine.tp, exp.engine.dp) == pc.engine_layout(row)
    assert exp.hardware.preset == row["gpu"] and exp.model.quantization == row["quantization"]
    assert exp.workload.num_prompts == row["num_prompts"]
    assert exp.calibration.measured == {}  # a new user's run: nothing fitted to the row


def test_no_experiment_without_a_row():
    ids = {r["id"] for r in ROWS if r["expressible"]}
    assert {p.stem for p in pc.EXPERIMENTS.glob("*.toml")} == ids


def test_score_inside_and_interval_score():
    inside = pc.score(100.0, 90.0, 100.0, 110.0)
    assert inside["inside"] and inside["interval_score_rel"] == pytest.approx(0.2)
    miss = pc.score(100.0, 50.0, 60.0, 70.0)  # 30 below the interval's top
    assert not miss["inside"]
    assert miss["interval_score_rel"] == pytest.approx((20 + 20 * 30) / 100)
    assert miss["error_pct"] == pytest.approx(-40.0)


def test_per_gpu_figures_are_scaled_to_the_deployment():
    row = next(r for r in ROWS if r["id"] == "vllm-blog-gb300-tp2-nvfp4-prefill-isl2k-c64")
    assert pc.measured_figures(row) == {"total_token_throughput": 2 * 7360}
    assert math.isinf(row["request_rate"])


def test_deepseek_r1_rows_use_the_dense_mla_family_and_are_scored_apart():
    mla = [r for r in ROWS if r["expressible"] and pc.MLA_MARK in r["marks"]]
    assert mla, "the corpus has expressible DeepSeek-V3/R1 rows"
    for row in mla:
        text = pc.experiment_text(row)
        assert 'preset = "deepseek-v3"\n' in text and "indexer_row_sharding" not in text
        assert load_experiment(pc.EXPERIMENTS / f"{row['id']}.toml").model.family == "mla"
    v32 = next(r for r in ROWS if r["expressible"] and pc.MLA_MARK not in r["marks"])
    fig = pc.score(1.0, 0.5, 1.0, 1.5)
    results = [{"id": r["id"], "figures": {"median_ttft_ms": fig}} for r in (mla[0], v32)]
    cells = pc.aggregate(results, {r["id"]: r for r in ROWS}, SPLIT)
    assert sorted(c["model"] for c in cells) == ["v3-r1", "v3.2"]


def test_source_settings_reach_the_experiment_by_fixed_rules():
    """An FP8 KV cache the source names, TensorRT-LLM's token budget and batch size, and
    trtllm-bench's greedy default sampling are written into the experiment; rows without them
    keep vLLM's defaults."""
    import tomllib

    from mtpsim.spec import experiment_from_dict

    rows = {r["id"]: r for r in ROWS}
    text = pc.experiment_text(rows["trtllm-blog15-b200-adp8-ep8-mtp1-isl8k-c256"])
    trt = experiment_from_dict(tomllib.loads(text))
    assert trt.engine.kv_cache_dtype == "fp8" and trt.workload.temperature == 0.0
    assert trt.engine.max_num_batched_tokens == 8576 and trt.engine.max_num_seqs == 256
    assert (trt.engine.tp, trt.engine.dp, trt.engine.ep) == (1, 8, True)
    plain = dict(rows["gpustack-h200-vllm-tp8-sharegpt"])
    text = pc.experiment_text(plain)
    assert "kv_cache_dtype" not in text and "temperature = 1.0" in text
    marked = {**plain, "marks": [*plain["marks"], pc.FP8_KV_MARK, pc.TRTLLM_BENCH_MARK]}
    exp = pc.experiment_text(marked)
    assert 'kv_cache_dtype = "fp8"' in exp and "temperature = 0.0" in exp


def test_sglang_dp_attention_is_written_as_mtpsim_data_parallel_ranks():
    """SGLang counts every GPU in --tp-size and splits attention into --dp-size ranks: --tp-size 8
    --dp-size 8 --enable-dp-attention is engine.tp = 1, dp = 8 (eight GPUs, as the row says), with
    one tokenizer manager in front; --context-length and --kv-cache-dtype fp8_e4m3 reach the
    experiment; SGLang's TP-only rows and vLLM's DP row are written as before."""
    rows = {r["id"]: r for r in ROWS}
    row = rows["gpustack-h200-sglang-dp8-kvfp8-sharegpt"]
    exp = load_experiment(pc.EXPERIMENTS / f"{row['id']}.toml")
    assert (exp.engine.tp, exp.engine.dp, exp.engine.ep) == (1, 8, False)
    assert exp.engine.dp * exp.engine.tp == row["num_gpus"] and exp.engine.api_server_count == 1
    assert exp.engine.kv_cache_dtype == "fp8" and exp.engine.max_model_len == 32768
    tp_only = load_experiment(pc.EXPERIMENTS / "gpustack-h200-sglang-tp8-sharegpt.toml")
    assert (tp_only.engine.tp, tp_only.engine.dp) == (8, 1)
    vllm_dp = rows["gpustack-h200-vllm-dp8ep-sharegpt"]
    assert pc.engine_layout(vllm_dp) == (1, 8) and "tokenizer manager" not in pc.experiment_text(vllm_dp)


def test_expert_parallel_tp_rows_are_written_with_ep_over_the_tp_ranks():
    """TensorRT-LLM's --tp_size 8 --ep_size 8 (no attention DP) is engine.tp = 8, ep = true, dp 1."""
    exp = load_experiment(pc.EXPERIMENTS / "gpustack-h200-trtllm-tp8ep8-sharegpt.toml")
    assert (exp.engine.tp, exp.engine.dp, exp.engine.ep) == (8, 1, True)


def test_per_user_speed_is_scored_as_one_over_tpot_and_acceptance_length_as_mtpsims():
    """A per-user output speed at one request at a time is 1,000 / TPOT: its interval is the TPOT
    interval's ends mapped and swapped, scored in the TPOT group; a source's acceptance length is
    mtpsim's spec_decode_acceptance_length. At higher concurrency the speed is not scored."""
    from types import SimpleNamespace

    rows = {r["id"]: r for r in ROWS}
    k3 = rows["trtllm-blog1-b200-r1-tp8-c1-k3"]
    assert pc.measured_figures(k3) == {"output_speed_per_user": 253, "acceptance_length": 2.82}
    assert pc.group_of("output_speed_per_user") == "tpot" and pc.group_of("acceptance_length") == "al"
    summary = {"mean_tpot_ms": SimpleNamespace(lo=2.0, median=4.0, hi=5.0),
               "spec_decode_acceptance_length": SimpleNamespace(lo=2.5, median=2.7, hi=2.9)}
    assert pc.interval_of(summary, "output_speed_per_user") == (200.0, 250.0, 500.0)
    assert pc.interval_of(summary, "acceptance_length") == (2.5, 2.7, 2.9)
    assert pc.interval_of(summary, "median_ttft_ms") is None
    busy = dict(k3, max_concurrency=8)
    assert "output_speed_per_user" not in pc.measured_figures(busy)
    text = pc.experiment_text(k3)  # real prompts, not named: fixed lengths, the chat class
    assert 'dataset_class = "chat"' in text and "ignore_eos = true" in text


def test_bench_serving_default_range_ratio_draws_lengths_from_one():
    """SGLang's bench_serving at its default --random-range-ratio 0 draws each length uniformly
    from 1 to the stated one: the experiment draws uniformly from 1 with the row's mean."""
    import numpy as np

    from mtpsim.sim.entities import draw_lengths

    row = next(r for r in ROWS if r["id"] == "sglang-cookbook-r1-b200-tp8-random1kx1k-c100")
    exp = load_experiment(pc.EXPERIMENTS / f"{row['id']}.toml")
    w = exp.workload
    assert (w.input_len_distribution, w.output_len_distribution) == ("uniform", "uniform")
    x = draw_lengths(np.random.default_rng(0), 20000, w.input_len, "uniform", w.input_len_spread)
    assert x.min() == 1 and x.max() == 2 * w.input_len - 1
    assert abs(x.mean() / row["input_len"] - 1) < 0.01
