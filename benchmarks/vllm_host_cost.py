"""Host CPU time of vLLM's scheduler per running request (the prior of
`calibration.host_us_per_request`, docs/public-corpus.md v3).

    python benchmarks/vllm_host_cost.py 64 256 512 1000
    python benchmarks/vllm_host_cost.py --mtp 1 256 1000     # also with MTP k = 1, interleaved
    python benchmarks/vllm_host_cost.py --cpu --steps 80 128 256 1000   # thread CPU time, more steps

Builds the installed vLLM's V1 `Scheduler` (no GPU, no weights: a two-layer config written to a
temporary folder, a paged KV cache large enough for every request), adds N requests of 200 prompt
tokens, and times `Scheduler.schedule` and `Scheduler.update_from_output` (one sampled token per
request) over decode-only steps. Prints, per N, the steps timed and the median milliseconds of
each, and the microseconds per running request. With `--mtp K` the config is a two-layer
DeepSeek-V3 with one MTP layer, and each N is also run with MTP K drafts (three of four
requests accept one draft; the drafts go back through `update_draft_token_ids`), k = 0 and
k = K interleaved. Needs the `vllm` extra.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
          "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 4,
          "num_hidden_layers": 2, "vocab_size": 32000, "max_position_embeddings": 8192,
          "torch_dtype": "bfloat16", "rms_norm_eps": 1e-5}
DEEPSEEK = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
            "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
            "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 2,
            "first_k_dense_replace": 1, "n_routed_experts": 8, "n_shared_experts": 1,
            "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 1.0,
            "norm_topk_prob": True, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
            "q_lora_rank": 64, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 16,
            "v_head_dim": 16, "vocab_size": 32000, "max_position_embeddings": 8192,
            "torch_dtype": "bfloat16", "rms_norm_eps": 1e-6, "num_nextn_predict_layers": 1,
            "rope_theta": 10000}
BLOCKS = 200_000
CLOCK = time.perf_counter  # --cpu: time.thread_time, the thread's CPU time (less moved by load)


def scheduler(model_dir: str, n: int, k: int = 0):
    import torch
    from vllm.config import (
        CacheConfig,
        DeviceConfig,
        ModelConfig,
        ParallelConfig,
        SchedulerConfig,
        SpeculativeConfig,
        VllmConfig,
    )
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, KVCacheTensor
    from vllm.v1.structured_output import StructuredOutputManager

    mc = ModelConfig(model=model_dir, skip_tokenizer_init=True, dtype="bfloat16",
                     max_model_len=8192)
    sc = SchedulerConfig(max_num_seqs=n, max_num_batched_tokens=max(8192, n * (k + 1)),
                         max_model_len=8192, is_encoder_decoder=False)
    cc = CacheConfig(block_size=16, gpu_memory_utilization=0.9, cache_dtype="auto")
    cc.num_gpu_blocks = BLOCKS
    spec = (SpeculativeConfig(method="mtp", num_speculative_tokens=k, target_model_config=mc,
                              target_parallel_config=ParallelConfig()) if k else None)
    vc = VllmConfig(model_config=mc, scheduler_config=sc, cache_config=cc,
                    device_config=DeviceConfig("cpu"), speculative_config=spec)
    spec = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=1, dtype=torch.float32)
    kvc = KVCacheConfig(num_blocks=BLOCKS, kv_cache_tensors=[KVCacheTensor(
        size=1, layers=["layer"], layer_stride=1, block_stride=1)],
        kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)])
    return Scheduler(vllm_config=vc, kv_cache_config=kvc,
                     structured_output_manager=StructuredOutputManager(vc), block_size=16,
                     log_stats=True)


def measure(model_dir: str, n: int, k: int = 0, steps: int = 40) -> tuple[int, float, float]:
    from vllm.sampling_params import SamplingParams
    from vllm.v1.outputs import DraftTokenIds, ModelRunnerOutput
    from vllm.v1.request import Request

    s = scheduler(model_dir, n, k)
    for i in range(n):
        s.add_request(Request(request_id=str(i), prompt_token_ids=list(range(200)),
                              sampling_params=SamplingParams(max_tokens=10_000, ignore_eos=True),
                              pooling_params=None))
    sched, update = [], []
    for _ in range(steps):
        t0 = CLOCK()
        out = s.schedule()
        t1 = CLOCK()
        ids = list(out.num_scheduled_tokens)
        sampled = [[5, 6] if k and j % 4 else [5] for j in range(len(ids))]
        mro = ModelRunnerOutput(req_ids=ids, req_id_to_index={r: j for j, r in enumerate(ids)},
                                sampled_token_ids=sampled, logprobs=None,
                                prompt_logprobs_dict={}, pooler_output=[])
        t2 = CLOCK()
        s.update_from_output(out, mro)
        if k:
            s.update_draft_token_ids(DraftTokenIds(ids, [[7] * k for _ in ids]))
        t3 = CLOCK()
        decode_only = out.total_num_scheduled_tokens <= len(ids) * (k + 1)
        if decode_only and len(ids) == n:  # decode-only steps of all n
            sched.append(t1 - t0)
            update.append(t3 - t2)
    return len(sched), statistics.median(sched) * 1e3, statistics.median(update) * 1e3


def main(argv: list[str]) -> int:
    global CLOCK
    mtp, steps = 0, 40
    while argv[:1] and argv[0].startswith("--"):
        if argv[0] == "--mtp":
            mtp, argv = int(argv[1]), argv[2:]
        elif argv[0] == "--steps":
            steps, argv = int(argv[1]), argv[2:]
        elif argv[0] == "--cpu":
            CLOCK, argv = time.thread_time, argv[1:]
        else:
            print(f"error: {argv[0]}: expected --mtp K, --steps N or --cpu", file=sys.stderr)
            return 2
    sizes = [int(a) for a in argv] or [64, 256, 1000]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(DEEPSEEK if mtp else CONFIG))
        print("running  k  steps  schedule_ms  update_ms  us_per_request")
        for n in sizes:
            for k in sorted({0, mtp}):
                timed, a, b = measure(d, n, k, steps)
                print(f"{n:7d}  {k}  {timed:5d}  {a:11.2f}  {b:9.2f}  {(a + b) * 1e3 / n:14.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
