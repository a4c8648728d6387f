"""Host CPU time of vLLM's scheduler per running request (the prior of
`calibration.host_us_per_request`, docs/public-corpus.md v3).

    python benchmarks/vllm_host_cost.py 64 256 512 1000

Builds the installed vLLM's V1 `Scheduler` (no GPU, no weights: a two-layer config written to a
temporary folder, a paged KV cache large enough for every request), adds N requests of 200 prompt
tokens, and times `Scheduler.schedule` and `Scheduler.update_from_output` (one sampled token per
request) over decode-only steps. Prints, per N, the steps timed and the median milliseconds of
each, and the microseconds per running request. Needs the `vllm` extra.
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
BLOCKS = 200_000


def scheduler(model_dir: str, n: int):
    import torch
    from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec, KVCacheTensor
    from vllm.v1.structured_output import StructuredOutputManager

    mc = ModelConfig(model=model_dir, skip_tokenizer_init=True, dtype="bfloat16",
                     max_model_len=8192)
    sc = SchedulerConfig(max_num_seqs=n, max_num_batched_tokens=max(8192, n), max_model_len=8192,
                         is_encoder_decoder=False)
    cc = CacheConfig(block_size=16, gpu_memory_utilization=0.9, cache_dtype="auto")
    cc.num_gpu_blocks = BLOCKS
    vc = VllmConfig(model_config=mc, scheduler_config=sc, cache_config=cc,
                    device_config=DeviceConfig("cpu"))
    spec = FullAttentionSpec(block_size=16, num_kv_heads=1, head_size=1, dtype=torch.float32)
    kvc = KVCacheConfig(num_blocks=BLOCKS, kv_cache_tensors=[KVCacheTensor(
        size=1, layers=["layer"], layer_stride=1, block_stride=1)],
        kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)])
    return Scheduler(vllm_config=vc, kv_cache_config=kvc,
                     structured_output_manager=StructuredOutputManager(vc), block_size=16,
                     log_stats=True)


def measure(model_dir: str, n: int, steps: int = 40) -> tuple[int, float, float]:
    from vllm.sampling_params import SamplingParams
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import Request

    s = scheduler(model_dir, n)
    for i in range(n):
        s.add_request(Request(request_id=str(i), prompt_token_ids=list(range(200)),
                              sampling_params=SamplingParams(max_tokens=10_000, ignore_eos=True),
                              pooling_params=None))
    sched, update = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        out = s.schedule()
        t1 = time.perf_counter()
        ids = list(out.num_scheduled_tokens)
        mro = ModelRunnerOutput(req_ids=ids, req_id_to_index={r: j for j, r in enumerate(ids)},
                                sampled_token_ids=[[5] for _ in ids], logprobs=None,
                                prompt_logprobs_dict={}, pooler_output=[])
        t2 = time.perf_counter()
        s.update_from_output(out, mro)
        t3 = time.perf_counter()
        if out.total_num_scheduled_tokens == len(ids) == n:  # decode-only steps of all n
            sched.append(t1 - t0)
            update.append(t3 - t2)
    return len(sched), statistics.median(sched) * 1e3, statistics.median(update) * 1e3


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [64, 256, 1000]
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(CONFIG))
        print("running  steps  schedule_ms  update_ms  us_per_request")
        for n in sizes:
            k, a, b = measure(d, n)
            print(f"{n:7d}  {k:5d}  {a:11.2f}  {b:9.2f}  {(a + b) * 1e3 / n:14.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
