"""Large-batch physics of the roofline (issue #23): vLLM's per-request host work per step, serial
before async scheduling and hidden behind the GPU under it; FlashMLA's fp8 decode kernel padding
a rank's heads to 64, so verify tokens cost FLOPs; the fused MoE's padded M tiles; and so, under
load with the host work serial, MTP's verify tokens cost enough that k = 1 gains less per step
than at small batch."""

import functools

import pytest

from mtpsim.models import gemm_rates
from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.spec import experiment_from_dict


def decode(b: int, ctx: float, topk: int = 2048) -> StepShape:
    return StepShape(num_decode=b, decode_ctx=b * ctx, decode_keys=b * min(ctx, topk),
                     num_draft=b, draft_ctx=b * ctx, draft_keys=b * min(ctx, topk))


def h200_tp8(k: int = 0, async_scheduling: bool = True, **cal) -> CostModel:
    exp = experiment_from_dict({
        "hardware": {"preset": "h200"},
        "engine": {"tp": 8, "max_num_seqs": 1024, "async_scheduling": async_scheduling},
        "speculative": {"num_speculative_tokens": k}, "calibration": cal})
    return CostModel(exp, "fresh")


def test_serial_host_work_grows_by_the_per_request_rate():
    # (no eager cost: 1,000 tokens run outside the CUDA graphs, 100 inside)
    cm = h200_tp8(async_scheduling=False, host_us_per_request=40.0, eager_overhead_ms=0.0)
    small, big = cm.step(decode(100, 400))["overhead"], cm.step(decode(1000, 400))["overhead"]
    # 900 more requests at 40 µs each: 36 ms more host time in the step
    assert big - small == pytest.approx(900 * 40e-6, rel=1e-9)


def test_async_scheduling_hides_host_work_shorter_than_the_gpu_step():
    serial = h200_tp8(async_scheduling=False, host_us_per_request=40.0).step(decode(1000, 400))
    hidden = h200_tp8(async_scheduling=True, host_us_per_request=40.0).step(decode(1000, 400))
    gpu = sum(v for p, v in hidden.items() if p != "overhead")
    assert gpu > 1000 * 40e-6  # the GPU step is longer than the host work here
    assert hidden["overhead"] == pytest.approx(h200_tp8(host_us_per_request=0.0)
                                               .step(decode(1000, 400))["overhead"])
    assert serial["overhead"] - hidden["overhead"] == pytest.approx(0.040, rel=1e-9)
    # host work longer than the GPU step shows through even under async scheduling
    slow_host = h200_tp8(async_scheduling=True, host_us_per_request=500.0).step(decode(1000, 400))
    assert sum(slow_host.values()) == pytest.approx(
        1000 * 500e-6 + hidden["overhead"], rel=1e-6)


def test_tp8_verify_queries_multiply_64_padded_heads():
    # compute-bound attention (efficiency tiny): its time is the FLOPs of 64 heads, not 16
    cm = h200_tp8(compute_efficiency=0.001, mem_efficiency=0.99)
    m = cm.exp.model
    keys = 1000 * 2048
    t = cm._attention(m.num_layers, keys, 1000)
    flops = m.num_layers * keys * 2 * 64 * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
    assert t == pytest.approx(flops / (cm.exp.hardware.bf16_tflops * 1e12 * 0.001))


def test_moe_tiles_pad_few_rows_per_expert_to_a_whole_tile():
    # the experts' grouped GEMM pays whole tiles (gemm_rates, DeepGEMM's 64 / 128-row tiles):
    # ~31 rows an expert cost what 64 do; many rows half a tile of padding each on average
    t = functools.partial(gemm_rates.tensor_seconds, n=512, k=7168, sms=132, peak_flops=1979e12,
                          random_rows=True)
    assert t(256.0, 31.25) == t(256.0, 32.0) == t(256.0, 1.0)
    assert t(256.0, 1000.0, random_rows=False) < t(256.0, 1000.0) < t(256.0, 1064.0,
                                                                       random_rows=False)


def test_verify_tokens_cost_more_as_the_batch_grows():
    # the k = 1 target pass over 2 tokens per request against k = 0's 1: cheap once (~100
    # requests) every expert is touched anyway and the weights' bytes dominate, dearer again
    # once attention's padded-head FLOPs and the activations do
    def verify_ratio(b: int) -> float:
        return float(h200_tp8(1).step(decode(b, 2048))["verify"]
                     / h200_tp8(0).step(decode(b, 2048))["verify"])

    assert verify_ratio(128) < 1.3
    assert verify_ratio(1000) > verify_ratio(128) + 0.3


def test_mtp_gains_less_per_step_under_load():
    def tokens_per_second(k: int, b: int, accepted: float) -> float:
        step = sum(h200_tp8(k).step(decode(b, 400)).values())
        return b * accepted / step

    def gain(b: int) -> float:  # k = 1 at a 0.75 acceptance (1.75 tokens a step) over k = 0
        return tokens_per_second(1, b, 1.75) / tokens_per_second(0, b, 1.0)

    assert gain(256) > gain(1000) + 0.15


def test_mtp_requests_cost_host_work_per_token_they_schedule():
    # vLLM's scheduler carries each request's draft and the output update handles every token
    # it accepts: a k = 1 request schedules 2 tokens and costs 2 requests' host time
    # (no eager cost: past the CUDA-graph ceiling, not host work)
    k0 = h200_tp8(0, async_scheduling=False, host_us_per_request=40.0, eager_overhead_ms=0.0)
    k1 = h200_tp8(1, async_scheduling=False, host_us_per_request=40.0, eager_overhead_ms=0.0)
    assert k1.step(decode(1000, 400))["overhead"] - k1.step(decode(0, 400))["overhead"] \
        == pytest.approx(2 * (k0.step(decode(1000, 400))["overhead"]
                              - k0.step(decode(0, 400))["overhead"]))


def test_serial_host_work_takes_mtps_gain_at_a_thousand_requests():
    # vLLM 0.13.0 (no async scheduling): at 40 µs a request (v3's rate, now above the prior's
    # top of 30) the k = 1 step at 1,000 running requests costs about what its 1.75 tokens are
    # worth, where at 64 it gains a third or more; at the default (12 µs) the gain still falls
    # with the batch, to ~1.09 at 1,000 (docs/public-corpus.md, "Host work per request,
    # re-grounded")
    def gain(b: int, **host) -> float:
        def tokens_per_second(k: int, accepted: float) -> float:
            return b * accepted / sum(h200_tp8(k, async_scheduling=False, **host)
                                      .step(decode(b, 400)).values())
        return tokens_per_second(1, 1.75) / tokens_per_second(0, 1.0)

    assert gain(64, host_us_per_request=40.0) > 1.3
    assert gain(1000, host_us_per_request=40.0) < 1.05
    assert gain(64) > gain(256) > gain(1000) + 0.2
    assert gain(1000) < 1.15
