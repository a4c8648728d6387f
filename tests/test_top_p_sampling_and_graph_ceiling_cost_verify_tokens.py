"""Two costs that grow with MTP's verify tokens at large batch (issue #23, the k = 0 vs k = 1
pair): top-p masking of every sampled row (the rejection sampler masks each draft row too), at
PyTorch's sort rate before vLLM's Triton kernels and at FlashInfer's / Triton's after; and vLLM's
CUDA-graph capture ceiling, counted in tokens, so that k = 1 leaves the graphs at half the
requests k = 0 does. Real mode passes top_p on and refuses what it cannot run."""

import subprocess
import sys

import pytest

from mtpsim.client.request import Sampling, build_payload
from mtpsim.client.workload import BenchRequest
from mtpsim.errors import UserError
from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import TOPP_S_PER_LOGIT, CostModel, cudagraph_max_tokens
from mtpsim.real.reference import InProcessReference, ServedReference
from mtpsim.real.vllm import Vllm
from mtpsim.spec import experiment_from_dict
from mtpsim.vllm_runner.argv import vllm_bench_argv


def decode(b: int, ctx: float = 400.0) -> StepShape:
    return StepShape(num_decode=b, decode_ctx=b * ctx, decode_keys=b * ctx, num_draft=b,
                     draft_ctx=b * ctx, draft_keys=b * ctx)


def spec(gpu: str = "h200", k: int = 0, top_p: float = 1.0, sampler: str = "kernels",
         mode: str = "full_and_piecewise", **engine):
    return experiment_from_dict({
        "hardware": {"preset": gpu},
        "engine": {"tp": 8, "max_num_seqs": 1024, "sampler": sampler, "cudagraph_mode": mode,
                   **engine},
        "speculative": {"num_speculative_tokens": k},
        "workload": {"top_p": top_p, "temperature": 1.0}})


def sampling_ms(exp, b: int) -> float:
    return float(CostModel(exp, "fresh" if exp.k else "no_mtp").step(decode(b))["rejection_sample"]) * 1e3


def test_sort_masking_costs_the_published_h100_rate_per_row():
    exp = spec("h100", top_p=0.95, sampler="sort")
    extra = sampling_ms(exp, 1024) - sampling_ms(spec("h100"), 1024)
    # PR #33538: 16.312 ms for 1,024 rows of 131,072 logits; DeepSeek's vocabulary is 129,280
    assert extra == pytest.approx(16.312 * exp.model.vocab_size / 131072, rel=1e-6)


def test_without_top_p_sampling_is_priced_as_before():
    for sampler in ("kernels", "sort"):
        assert sampling_ms(spec(sampler=sampler), 1000) == sampling_ms(spec(), 1000)
    assert sampling_ms(spec(), 1000) < 1.0  # three passes over the logits: well under a ms


def test_draft_rows_double_the_masking_at_k1_under_the_sort():
    base0, base1 = sampling_ms(spec(k=0), 1000), sampling_ms(spec(k=1), 1000)
    sort0 = sampling_ms(spec(k=0, top_p=0.95, sampler="sort"), 1000) - base0
    sort1 = sampling_ms(spec(k=1, top_p=0.95, sampler="sort"), 1000) - base1
    assert sort1 == pytest.approx(2 * sort0, rel=1e-9)  # 1,000 sampler rows + 1,000 draft rows
    assert sort0 > 10.0  # H200, 1,000 rows: ~11 ms, a tenth of a step at this batch


def test_vllm_0_33_kernels_mask_faster_than_the_sort():
    sort = sampling_ms(spec(k=1, top_p=0.95, sampler="sort"), 1000)
    kernels = sampling_ms(spec(k=1, top_p=0.95), 1000)
    assert kernels < sort
    assert TOPP_S_PER_LOGIT["flashinfer"] < TOPP_S_PER_LOGIT["triton"] < TOPP_S_PER_LOGIT["sort"]


def test_capture_ceiling_counts_verify_tokens():
    assert cudagraph_max_tokens(spec(k=0)) == 512  # Hopper's default ceiling
    assert cudagraph_max_tokens(spec(k=1)) == 512
    assert cudagraph_max_tokens(spec("b200", k=1)) == 1024  # Blackwell's
    assert cudagraph_max_tokens(spec(k=1, max_num_seqs=64)) == 256  # 64 x 2 x 2
    assert cudagraph_max_tokens(spec(k=1, max_num_batched_tokens=300)) == 300
    assert cudagraph_max_tokens(spec(mode="none")) == 0


def test_k1_leaves_the_graphs_at_half_the_requests_of_k0():
    eager_ms = spec().calibration.eager_overhead_ms

    def overhead(k: int, b: int) -> float:  # async scheduling: the host work hides behind the GPU
        return float(CostModel(spec(k=k), "fresh" if k else "no_mtp").step(decode(b))["overhead"]) * 1e3

    # 300 requests: k = 0 runs 300 tokens in a graph, k = 1 600 tokens eagerly (at 256 only
    # its drafter's one-layer forward, piecewise, was: half of 1 of 62 layer forwards)
    assert overhead(1, 300) - overhead(1, 256) == pytest.approx(eager_ms * (1 - 0.5 / 62))
    assert overhead(0, 300) == pytest.approx(overhead(0, 256))
    assert overhead(0, 513) - overhead(0, 512) == pytest.approx(eager_ms)


def test_mixed_steps_past_the_ceiling_run_eagerly():
    cm = CostModel(spec(k=1), "fresh")
    small = StepShape(num_decode=10, decode_ctx=4000, decode_keys=4000, num_draft=10,
                      prefill_tokens=100, prefill_keys=5050, prefill_pairs=5050,
                      prefill_reads=100, prefill_done=1)
    big = StepShape(num_decode=10, decode_ctx=4000, decode_keys=4000, num_draft=10,
                    prefill_tokens=2000, prefill_keys=2e6, prefill_pairs=2e6,
                    prefill_reads=2000, prefill_done=1)
    eager = cm.exp.calibration.eager_overhead_ms * 1e-3  # host work hidden (async scheduling)
    # piecewise graphs carry the 120-token step (half eager by EAGER_SHARE); 2,020 tokens none
    assert float(cm.step(big)["overhead"]) - float(cm.step(small)["overhead"]) == pytest.approx(
        eager / 2, rel=1e-6)


def test_real_mode_sends_top_p_and_refuses_what_it_cannot_run(tmp_path):
    exp = spec(k=1, top_p=0.95)
    argv = vllm_bench_argv(exp, "http://127.0.0.1:1", tmp_path, "r.json")
    assert argv[argv.index("--top-p") + 1] == "0.95"
    assert "--top-p" not in vllm_bench_argv(spec(k=1), "http://127.0.0.1:1", tmp_path, "r.json")
    req = BenchRequest(output_len=4, prompt="hi", input_len=1)
    assert build_payload("openai", req, Sampling("m", 1.0, True, 0.95))["top_p"] == 0.95
    assert "top_p" not in build_payload("openai", req, Sampling("m", 1.0, True))
    for backend in (InProcessReference(), ServedReference()):
        with pytest.raises(UserError, match="workload.top_p"):
            backend.refuse(exp, ["fresh"])
    with pytest.raises(UserError, match="engine.sampler"):
        Vllm().refuse(spec(k=1, sampler="sort"), ["fresh"])
    Vllm().refuse(exp, ["fresh"])  # top-p itself is fine with vLLM


@pytest.mark.parametrize("field, value", [("workload.top_p", "0"), ("workload.top_p", "1.5"),
                                          ("engine.sampler", "bogus")])
def test_bad_sampling_settings_are_one_line_and_exit_2(field, value):
    p = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", "experiments/smoke-h200.toml",
                        "--set", f"{field}={value}"], capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert field in p.stderr + p.stdout


def test_hopper_sparse_mla_never_beats_flashmla_published_rate():
    # compute-bound verify attention (HBM made fast): FlashMLA's 410 TFLOPS (fp8 cache) or 640
    # TFLOPS (bf16 cache) on Hopper caps what compute_efficiency would give
    def attention_s(gpu: str, dtype: str, eff: float) -> float:
        exp = experiment_from_dict({"hardware": {"preset": gpu, "hbm_tbps": 100.0},
                                    "engine": {"tp": 8, "kv_cache_dtype": dtype},
                                    "calibration": {"compute_efficiency": eff, "mem_efficiency": 1.0}})
        return CostModel(exp, "fresh")._attention(61, 2000 * 2048, 2000)

    m = experiment_from_dict({}).model
    flops = 61 * 2000 * 2048 * 2 * 64 * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
    assert attention_s("h200", "fp8", 0.7) == pytest.approx(flops / 410e12)
    assert attention_s("h200", "bfloat16", 0.7) == pytest.approx(flops / 640e12)
    assert attention_s("h200", "fp8", 0.3) == pytest.approx(flops / (989e12 * 0.3))  # below it
    b200 = experiment_from_dict({"hardware": {"preset": "b200"}}).hardware.bf16_tflops
    assert attention_s("b200", "fp8", 0.7) == pytest.approx(flops / (b200 * 1e12 * 0.7))
