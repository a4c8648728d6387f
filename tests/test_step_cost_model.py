"""The roofline step-cost model: named phases, what each policy pays, and what it scales with."""

import numpy as np
import pytest

from mtpsim.errors import SpecError
from mtpsim.models.cost import StepShape
from mtpsim.models.memory import check_fits
from mtpsim.models.roofline import CostModel
from mtpsim.result import PHASES
from mtpsim.spec import experiment_from_dict


def decode(b: int, ctx: float, topk: int = 2048) -> StepShape:
    return StepShape(num_decode=b, decode_ctx=b * ctx, decode_keys=b * min(ctx, topk),
                     num_draft=b, draft_ctx=b * ctx, draft_keys=b * min(ctx, topk))


def pr_exp(**cal):
    return experiment_from_dict({"model": {"quantization": "nvfp4"},
                                 "engine": {"tp": 4, "max_num_seqs": 64}, "calibration": cal})


def test_every_phase_is_reported_by_its_shared_name():
    out = CostModel(pr_exp(), "fresh").step(decode(32, 10_000))
    assert tuple(out) == PHASES
    assert out["prefill"] == 0 and out["verify"] > out["draft_prefill"] > 0


def test_deepseek_weights_count_671b_parameters():
    cm = CostModel(experiment_from_dict({"model": {"quantization": "bf16"}}), "fresh")
    # bf16, tp=1: 2 bytes per parameter (MTP layer included: ~671B + ~11.5B)
    assert cm.weight_bytes_per_gpu() / 2 / 1e9 == pytest.approx(683, rel=0.02)


def test_sharing_removes_exactly_the_draft_indexer():
    fresh = CostModel(pr_exp(), "fresh").step(decode(32, 10_000))
    share = CostModel(pr_exp(), "share").step(decode(32, 10_000))
    assert fresh["draft_decode_indexer"] > 0 and share["draft_decode_indexer"] == 0
    for phase in ("verify", "draft_decode_rest", "rejection_sample", "overhead"):
        assert share[phase] == fresh[phase]
    # compact_topk_indices adds a tiny gather to draft step 0
    assert 0 < share["draft_prefill"] - fresh["draft_prefill"] < 1e-5


def test_at_k1_share_is_freshs_program_step_for_step():
    """Model Runner V2 compacts step 0's top-k rows only when draft steps 1.. will reuse them
    (vLLM 0.33.0 mtp/speculator.py `on_prefill_end`: num_speculative_steps > 1): at k = 1 `share`
    prices every phase exactly as `fresh`; at k = 2 the compaction's gather is back."""
    def at(k: int):
        return experiment_from_dict({"model": {"quantization": "nvfp4"},
                                     "engine": {"tp": 4, "max_num_seqs": 64},
                                     "speculative": {"num_speculative_tokens": k}})

    k1 = at(1)
    fresh, share = (CostModel(k1, p).step(decode(32, 10_000)) for p in ("fresh", "share"))
    assert all(share[ph] == fresh[ph] for ph in PHASES)
    k2 = at(2)
    fresh, share = (CostModel(k2, p).step(decode(32, 10_000)) for p in ("fresh", "share"))
    assert 0 < share["draft_prefill"] - fresh["draft_prefill"] < 1e-5


def test_target_share_never_runs_the_mtp_indexer():
    fresh = CostModel(pr_exp(), "fresh").step(decode(32, 60_000))
    tgt = CostModel(pr_exp(), "target_share").step(decode(32, 60_000))
    assert tgt["draft_decode_indexer"] == 0 and tgt["draft_prefill"] < fresh["draft_prefill"]


def test_indexer_cost_grows_linearly_with_context_once_above_the_floor():
    cm = CostModel(pr_exp(), "fresh")
    ctx = np.array([200_000.0, 400_000.0, 600_000.0])
    t = cm.step(StepShape(num_decode=32, decode_ctx=32 * ctx, decode_keys=32 * 2048.0,
                          num_draft=32, draft_ctx=32 * ctx, draft_keys=32 * 2048.0))
    d = np.diff(t["draft_decode_indexer"])
    assert d[0] > 0 and d[0] == pytest.approx(d[1], rel=1e-9)


def test_bandwidth_efficiency_scales_memory_bound_decode():
    slow = CostModel(pr_exp(mem_efficiency=0.2), "fresh").step(decode(8, 2000))["verify"]
    fast = CostModel(pr_exp(mem_efficiency=0.4), "fresh").step(decode(8, 2000))["verify"]
    assert 1.8 < float(slow / fast) <= 2.0


def test_a_batch_touches_more_experts_and_costs_more_but_sublinearly():
    cm = CostModel(pr_exp(), "fresh")
    t1, t32 = (float(cm.step(decode(b, 2000))["verify"]) for b in (1, 32))
    assert t1 < t32 < 32 * t1


def test_steps_with_prefill_pay_the_eager_overhead_under_full_decode_only():
    cm = CostModel(pr_exp(overhead_ms=1.0, eager_overhead_ms=2.0), "fresh")
    # a decode-only step replays the target's graph; the drafter's 3 one-layer forwards run
    # eagerly (no piecewise part in the mode): 3 of 61 + 3 layer forwards pay the eager 2 ms
    assert float(cm.step(decode(4, 100))["overhead"]) == pytest.approx(1e-3 + 2e-3 * 3 / 64)
    pre = cm.step(StepShape(prefill_tokens=100, prefill_keys=5050, prefill_pairs=5050,
                            prefill_reads=100, prefill_done=1))
    assert float(pre["overhead"]) == pytest.approx(3e-3)
    assert float(pre["prefill"]) > 0


def test_bf16_deepseek_does_not_fit_one_gpu():
    with pytest.raises(SpecError, match="engine.tp: expected enough GPUs"):
        check_fits(experiment_from_dict({"model": {"quantization": "bf16"}}))


def test_a_kv_cache_that_cannot_hold_one_request_is_refused():
    # a batch that overflows the cache is simulated (vLLM queues and preempts); one request
    # that cannot fit even alone is refused
    batch = experiment_from_dict({"model": {"quantization": "nvfp4"}, "engine": {"tp": 4,
                                  "max_num_seqs": 64, "max_model_len": 262_144},
                                  "workload": {"input_len": 200_000, "output_len": 1000,
                                               "max_concurrency": 64}})
    check_fits(batch)
    one = experiment_from_dict({"model": {"quantization": "nvfp4", "max_position_embeddings": 0},
                                "engine": {"tp": 4},
                                "workload": {"input_len": 9_000_000, "output_len": 1000}})
    with pytest.raises(SpecError, match="engine.gpu_memory_utilization: expected a KV cache that "
                       "holds one request"):
        check_fits(one)
