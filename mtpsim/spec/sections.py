"""One frozen dataclass per experiment section. Adding a field is one line with `option(...)`.

A section's `ROLE` is the role (mtpsim.spec.fields.ROLES) of each of its fields that declares
none of its own with `option(..., role=...)`."""

from __future__ import annotations

import math
from typing import ClassVar

from mtpsim.dataclass import dataclass
from mtpsim.models.families import FAMILIES
from mtpsim.models.penalty import DEFAULT_PENALTY, PENALTIES
from mtpsim.spec.fields import (
    at_least,
    each,
    greater_than,
    in_range,
    one_of,
    option,
    unit_interval_open_low,
)

QUANTIZATIONS = ("bf16", "fp8", "nvfp4", "mxfp4")
KV_CACHE_DTYPES = ("auto", "bfloat16", "fp8")
TOPOLOGIES = ("switch", "mesh")
DATASET_CLASSES = ("low_entropy", "code_math", "chat", "random")
CUDAGRAPH_MODES = ("none", "piecewise", "full", "full_decode_only", "full_and_piecewise")
SAMPLERS = ("kernels", "sort")
LENGTH_DISTRIBUTIONS = ("fixed", "uniform", "lognormal")


class SchedulerRule:
    """How a simulated engine forms its steps (`engine.scheduler`), read by the simulator and
    the spec instead of comparing scheduler names: a new engine's scheduler is one entry.
    `token_budget`: engine.max_num_batched_tokens caps a step (chunked prefill if enabled);
    `kv_cache`: the KV cache's size (mtpsim.models.memory) limits admission; `model_preset`:
    its experiments' default model preset (None: ModelSpec's). A plain class: a dataclass
    would cost every `simulate` ~5 M instructions at import (docs/speed.md, round 6)."""

    __slots__ = ("token_budget", "kv_cache", "model_preset", "on_host")

    def __init__(self, token_budget: bool, kv_cache: bool, model_preset: str | None = None,
                 on_host: bool = False) -> None:
        self.token_budget, self.kv_cache, self.model_preset = token_budget, kv_cache, model_preset
        # `on_host`: its engine runs on this host's CPU or GPU ([reference] device); else on the
        # spec's [hardware] GPUs, engine.tp of them (what a calibration's machine is held against)
        self.on_host = on_host


SCHEDULERS: dict[str, SchedulerRule] = {
    "vllm": SchedulerRule(token_budget=True, kv_cache=True),
    # mtpsim's reference engine: no token budget, each admitted prompt prefilled whole; it runs
    # mtpsim's reference model, not DeepSeek-V3.2 (whose 638 GiB of weights fit no single GPU)
    "reference": SchedulerRule(token_budget=False, kv_cache=False, model_preset="reference",
                               on_host=True),
}
# Efficiency factors and per-step costs that `[calibration] fit` may name.
FITTABLE = ("mem_efficiency", "compute_efficiency", "comm_efficiency", "overhead_ms",
            "eager_overhead_ms", "gemm_efficiency")

_pos = at_least(1)
_nonneg = at_least(0)
_PCT_SD = in_range(0, 1000)  # an SD in %: beyond 1000 % it is no model, and exp() overflows
_MAX_LEN = 10_000_000  # tokens of one prompt or output
# reference.threads: the most hardware threads of any one machine, with room (torch segfaults
# when asked for 100,000); a run also refuses more than the cores it may use
MAX_THREADS = 1024


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A DSA + MTP model; a preset file fills the fields, the experiment may override any."""

    ROLE: ClassVar[str] = "setup"

    preset: str = option("deepseek-v3.2", "preset file under spec/presets/models ('' = none; "
                         "'reference' when engine.scheduler = 'reference')")
    family: str = option("dsa_mla", "what the layers are: a module under mtpsim/models/families "
                         "(dsa_mla: every layer MLA + DSA, as DeepSeek-V3.2; mla: dense MLA, as "
                         "DeepSeek-V3/R1)", one_of(*FAMILIES))
    name: str = option("", "Hugging Face id that `vllm serve` loads")
    quantization: str = option("fp8", "weight format", one_of(*QUANTIZATIONS))
    num_layers: int = option(0, "decoder layers of the target (MTP layers excluded)", _pos)
    num_dense_layers: int = option(0, "leading layers with a dense MLP instead of MoE", _nonneg)
    hidden_size: int = option(0, "model width", _pos)
    num_heads: int = option(0, "attention heads", _pos)
    q_lora_rank: int = option(0, "MLA query low-rank dimension", _pos)
    kv_lora_rank: int = option(0, "MLA latent KV dimension", _pos)
    qk_nope_head_dim: int = option(0, "per-head query/key dims without RoPE", _pos)
    qk_rope_head_dim: int = option(0, "per-head RoPE dims", _pos)
    v_head_dim: int = option(0, "per-head value dims", _pos)
    intermediate_size: int = option(0, "dense MLP width", _pos)
    moe_intermediate_size: int = option(0, "routed/shared expert width", _pos)
    num_routed_experts: int = option(0, "routed experts per MoE layer", _pos)
    num_experts_per_tok: int = option(0, "routed experts each token uses", _pos)
    num_shared_experts: int = option(0, "always-on experts per MoE layer", _nonneg)
    vocab_size: int = option(0, "vocabulary size", _pos)
    index_n_heads: int = option(0, "lightning-indexer heads (DSA families; 0 for mla)", _nonneg)
    index_head_dim: int = option(0, "lightning-indexer head dims (DSA families)", _nonneg)
    index_topk: int = option(0, "positions each query's sparse attention selects (DSA families; "
                            "mla reads every earlier key)", _nonneg)
    num_indexer_layers: int = option(0, "target layers that run their own indexer (DSA "
                                    "families)", _nonneg)
    num_mtp_layers: int = option(1, "MTP layers (each with its own indexer)", _pos)
    kv_bytes_per_token: int = option(656, "MLA KV-cache bytes per token per layer in vLLM's fp8 "
                                     "layout (fp8_ds_mla); a bf16 cache holds (kv_lora_rank + "
                                     "qk_rope_head_dim) x 2", _pos)
    indexer_bytes_per_token: int = option(132, "indexer key-cache bytes per token per layer", _pos)
    full_attention_period: int = option(0, "hybrid_linear_dsa: layer i (from 1) is MLA + DSA "
                                        "when a multiple of this or the last, else linear "
                                        "attention", _nonneg)
    linear_num_heads: int = option(0, "linear-attention heads (hybrid_linear_dsa)", _nonneg)
    linear_head_dim: int = option(0, "linear-attention head dims (state: heads x dim x dim fp32)",
                                  _nonneg)
    linear_conv_kernel: int = option(4, "linear attention's short convolution width", _pos)
    max_position_embeddings: int = option(0, "context the model is configured for: vLLM's "
                                          "default max_model_len (0 = unknown)", _nonneg)


@dataclass(frozen=True, slots=True)
class HardwareSpec:
    """One GPU; `engine.tp` of them serve the model."""

    ROLE: ClassVar[str] = "setup"

    preset: str = option("b200", "preset file under spec/presets/gpus ('' = none)")
    name: str = option("", "GPU name")
    memory_gib: float = option(0.0, "HBM capacity", greater_than(0))
    hbm_tbps: float = option(0.0, "HBM bandwidth, TB/s", greater_than(0))
    bf16_tflops: float = option(0.0, "dense BF16 tensor TFLOP/s", greater_than(0))
    fp8_tflops: float = option(0.0, "dense FP8 tensor TFLOP/s", greater_than(0))
    fp4_tflops: float = option(0.0, "dense NVFP4 tensor TFLOP/s (0 = none)", _nonneg)
    mxfp4_tflops: float = option(0.0, "dense MXFP4 tensor TFLOP/s (0 = none: MXFP4 weights are "
                                 "dequantized and multiplied in bf16)", _nonneg)
    sms: int = option(132, "streaming multiprocessors (compute units on AMD) the GEMM model's "
                      "tiles spread over (mtpsim.models.gemm_rates)", _pos)
    nvlink_gbps: float = option(0.0, "scale-up bandwidth per GPU (NVLink or Infinity Fabric, "
                                "all links, both directions), GB/s", greater_than(0))
    links: int = option(0, "scale-up links per GPU (0 = not stated)", _nonneg)
    topology: str = option("switch", "switch: every GPU reaches any other at full bandwidth "
                           "(NVSwitch, NVL72); mesh: one direct link per peer (AMD 8-GPU "
                           "Infinity Fabric)", one_of(*TOPOLOGIES))
    allreduce_latency_us: float = option(8.0, "fixed latency of one small all-reduce", _nonneg)
    kernel_floor_us: float = option(3.0, "minimum time of one GPU kernel", _nonneg)

    @property
    def architecture(self) -> str:
        """The GPU generation its name says, which decides the kernels an engine picks:
        "hopper" (H100, H200, H20, H800: SM90), "blackwell" (B200, B300, GB200, GB300), "cdna"
        (AMD MI300X, MI355X), "" when the name says none of these."""
        name = self.name.upper()
        if name.startswith(("B2", "B3", "GB2", "GB3")):
            return "blackwell"
        if name.startswith("MI"):
            return "cdna"
        return "hopper" if name.startswith("H") else ""

    def group_gbps(self, n: int) -> float:
        """Bandwidth one GPU can use in a collective over `n` GPUs: all of it behind a switch;
        on a full mesh only the n - 1 links to the group's peers carry traffic."""
        if self.topology == "mesh" and self.links > 0 and n > 1:
            return self.nvlink_gbps * min(n - 1, self.links) / self.links
        return self.nvlink_gbps


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """vLLM engine settings the cost and the scheduler depend on."""

    ROLE: ClassVar[str] = "setup"

    tp: int = option(1, "tensor-parallel size (of each data-parallel rank)", _pos)
    dp: int = option(1, "attention data-parallel ranks (vLLM --data-parallel-size): each an "
                     "engine with its own scheduler and KV cache; MoE layers span all dp x tp GPUs",
                     in_range(1, 1024))
    ep: bool = option(False, "expert parallelism (vLLM --enable-expert-parallel): each of the "
                      "dp x tp GPUs holds whole experts; under DP each MoE layer all-gathers every "
                      "rank's tokens (vLLM's default allgather_reducescatter)")
    num_gpus: int = option(0, "GPUs of the deployment, checked against dp x tp x pp (0 = that "
                           "product)", _nonneg)
    max_num_seqs: int = option(256, "requests running at once", _pos)
    max_num_batched_tokens: int = option(8192, "token budget of one engine step", _pos)
    enable_chunked_prefill: bool = option(True, "split long prompts across steps")
    cudagraph_mode: str = option("full_decode_only", "CUDA-graph mode", one_of(*CUDAGRAPH_MODES))
    gpu_memory_utilization: float = option(0.9, "share of HBM vLLM may use",
                                           unit_interval_open_low)
    scheduler: str = option("vllm", "how steps are formed: vllm (token budget, chunked prefill) "
                            "or reference (mtpsim's engine: no token budget; each admitted prompt "
                            "is prefilled whole in the step after the running requests verify)",
                            one_of(*SCHEDULERS))
    block_size: int = option(64, "KV-cache block size in tokens (vLLM's sparse MLA uses 64)",
                             in_range(1, 4096))
    non_kv_memory_gib: float = option(5.0, "GPU memory beside weights and KV cache: activations "
                                      "at vLLM's profile run, CUDA graphs, communication "
                                      "buffers (assumed; vLLM measures it)", _nonneg)
    async_scheduling: bool = option(True, "vLLM --async-scheduling: the host schedules the next "
                                    "step while the GPU runs this one (default on since vLLM "
                                    "0.14.0; off, host work adds to every step)")
    sampler: str = option("kernels", "how top-p / top-k rows are masked (simulation: its cost per "
                          "sampled row): kernels = vLLM 0.33.0 (FlashInfer sampler, Triton "
                          "top-k/top-p in the rejection sampler); sort = PyTorch's full-vocabulary "
                          "sort, vLLM before the Triton kernels (<= 0.14)", one_of(*SAMPLERS))
    max_model_len: int = option(0, "vLLM --max-model-len (0 = model.max_position_embeddings); "
                                "vLLM refuses to start unless the KV cache holds one request "
                                "this long", in_range(0, _MAX_LEN))
    kv_cache_dtype: str = option("auto", "vLLM --kv-cache-dtype: auto = the checkpoint's KV "
                                 "scheme, else bf16 (fp8 and bf16 checkpoints: bf16 latent; "
                                 "4-bit checkpoints: fp8, assumed); fp8 = fp8_ds_mla",
                                 one_of(*KV_CACHE_DTYPES))
    indexer_row_sharding: bool = option(True, "TP ranks split a prefill's indexer rows and "
                                        "all-gather their top-k (vLLM 0.33.0; vLLM PR #54394 of "
                                        "August 2026 says main recomputed the same logits and "
                                        "top-k on every rank before); off, every rank scores "
                                        "every prompt row")
    sparse_topk_length: bool = option(True, "the BF16 sparse MLA kernel is told each query "
                                      "row's count of valid top-k entries and stops there "
                                      "(vLLM 0.33.0, since vLLM PR #36616 of mid-2026); off "
                                      "(vLLM and SGLang before it), FlashMLA multiplies the "
                                      "full -1-padded top-k width for every row, however short "
                                      "its context (Hopper)")
    dense_short_prefill: bool = option(True, "a step whose prompt chunks all end within "
                                       "index_topk (2,048) runs them as dense MHA, not sparse "
                                       "MQA, and a step of prompts alone skips their indexer "
                                       "(vLLM 0.33.0, since vLLM PR #47327 of July 2026); off, "
                                       "every prompt row goes through the sparse MLA kernel "
                                       "(vLLM before it)")
    indexer_clean_logits: bool = option(False, "the indexer's logits kernels fill every column "
                                        "of each query row outside its keys with -inf "
                                        "(DeepGEMM clean_logits=True: vLLM before PR #33568 of "
                                        "February 2026, e.g. 0.13.0 and 0.14.1): a decode row is "
                                        "max_model_len wide, a prompt row as wide as the step's "
                                        "prompt keys; off (vLLM 0.33.0), nothing is filled")
    api_server_count: int = option(0, "vLLM --api-server-count: API-server processes in front "
                                   "of the engines (0 = vLLM 0.33.0's default, one per DP rank; "
                                   "vLLM before 0.15 ran one for all ranks)", in_range(0, 1024))
    pp: int = option(1, "pipeline-parallel size (dp x tp x pp GPUs, across nodes with "
                     "vllm.distributed_executor_backend = 'ray'; the simulator splits weights and "
                     "KV cache over the stages)", _pos)


@dataclass(frozen=True, slots=True)
class SpeculativeSpec:
    """`--speculative-config`: MTP drafting."""

    ROLE: ClassVar[str] = "setup"

    method: str = option("mtp", "drafting method", one_of("mtp"))
    num_speculative_tokens: int = option(3, "draft tokens per step (k; 0 = plain decoding, no MTP: "
                                        "one run, reported as policy no_mtp)", in_range(0, 64))
    index_topk: int | None = option(None, "top-k of the sparse attention (default: the model's)",
                                    greater_than(0))


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """The benchmark client (`vllm bench serve`)."""

    ROLE: ClassVar[str] = "setup"

    num_prompts: int = option(256, "requests sent", in_range(1, 100_000))
    input_len: int = option(1024, "prompt tokens (mean if distributed)", in_range(1, _MAX_LEN))
    output_len: int = option(1024, "output tokens (mean if distributed)", in_range(1, _MAX_LEN))
    input_len_distribution: str = option("fixed", "prompt-length distribution",
                                         one_of(*LENGTH_DISTRIBUTIONS))
    input_len_spread: float = option(0.0, "uniform: range ratio; lognormal: sigma", _nonneg)
    output_len_distribution: str = option("fixed", "output-length distribution",
                                          one_of(*LENGTH_DISTRIBUTIONS))
    output_len_spread: float = option(0.0, "uniform: range ratio; lognormal: sigma", _nonneg)
    max_total_len: int = option(0, "vllm bench serve's dataset filter (`is_valid_sequence`; "
                                "ShareGPT: 2048): pairs whose prompt + output exceed it, whose "
                                "prompt exceeds half of it or whose prompt or output is under 4 "
                                "tokens are not sampled; lognormal lengths are drawn so that the "
                                "kept pairs have the given means (0 = no filter)",
                                in_range(0, _MAX_LEN))
    max_concurrency: int | None = option(None, "requests in flight at most (default: unlimited)",
                                         _pos)
    request_rate: float = option(math.inf, "requests per second (inf = all at t=0); the arrivals "
                                 "span num_prompts / request_rate <= 1e7 s",
                                 greater_than(0))
    burstiness: float = option(1.0, "gamma shape of inter-arrival times (1 = Poisson)",
                               greater_than(0))
    ignore_eos: bool = option(True, "generate exactly the output length")
    temperature: float = option(1.0, "sampling temperature", _nonneg)
    top_p: float = option(1.0, "nucleus sampling threshold of every request (1 = none); below 1 "
                          "vLLM masks every sampled row, the rejection sampler's draft rows too",
                          unit_interval_open_low)
    # Real mode only (the benchmark client against a server):
    dataset: str = option("random", "random token ids, or speed-bench (local files)",
                          one_of("random", "speed-bench"))
    dataset_path: str = option("", "speed-bench: folder holding <dataset_subset>.jsonl")
    dataset_subset: str = option("throughput_16k", "speed-bench: the subset file's name")
    category: str = option("", "speed-bench: only rows of this category ('' = all)")
    max_input_len: int = option(0, "speed-bench: cut prompts to this many tokens (0 = no cut)",
                                _nonneg)
    backend: str = option("openai-chat", "endpoint: openai (completions) or openai-chat",
                          one_of("openai", "openai-chat"))
    num_warmups: int = option(0, "warm-up requests before the measured run",
                              in_range(0, 100_000))
    rounds: int = option(0, "the requests as this many consecutive rounds, each from an empty "
                         "engine with its arrivals from t=0, pooled (what run-real's interleaved "
                         "rounds serve); 0: simulate serves the one stream and run-real picks its "
                         "rounds (--rounds)",
                         in_range(0, 100_000))


@dataclass(frozen=True, slots=True)
class AcceptanceSpec:
    """Per-position acceptance with sharing off, and how reuse policies change it."""

    ROLE: ClassVar[str] = "model"

    per_position: tuple[float, ...] = option(
        (0.8745, 0.6010, 0.3534), "acceptance per draft position (at least k in the file; a k set "
        "by `--set` or swept beyond the table repeats the last conditional rate, and a note says so)",
        each(in_range(0, 1)))
    kind: str = option("marginal", "marginal (vLLM's per-position rates) or conditional",
                       one_of("marginal", "conditional"))
    mode: str = option("sampled", "sampled (seeded draws) or expected (no noise)",
                       one_of("sampled", "expected"))
    request_sigma: float = option(0.0, "spread of per-request acceptance (logit std)",
                                  in_range(0, 10))
    request_draw: str = option("stratified", "how the per-request logit shifts (SD request_sigma, or "
                               "a calibration's sigma) are drawn: stratified (normal quantiles in "
                               "random order: the workload's mean shift is 0, so an interval is "
                               "for the expected acceptance) or independent (i.i.d. normal per "
                               "request: it also spans what a finite workload of num_prompts "
                               "requests measures)", one_of("stratified", "independent"))
    overlap_agreement: float = option(0.41, "consecutive-step top-k agreement beyond chance",
                                      in_range(0, 1))
    overlap_step_exponent: float = option(0.5, "agreement at gap s is agreement ** s**this",
                                          in_range(0, 10))
    target_agreement: float = option(0.05, "MTP vs target last-layer top-k agreement",
                                     in_range(0, 1))
    dataset_class: str = option("", "what the rates were measured on, relative to this workload: "
                                "'' (this workload: rates fixed), or the workload's class, whose "
                                "prior on rate_scale --uncertainty draws (docs/uncertainty.md): "
                                "low_entropy, code_math, chat, random",
                                one_of("", *DATASET_CLASSES))
    rate_scale: float = option(1.0, "multiplier of every conditional acceptance rate (each capped "
                               "at 0.99); --uncertainty draws it from dataset_class's prior",
                               in_range(0.05, 2.0))
    critical_entries: float = option(8.0, "kappa in a' = a * (1 - (1 - overlap)**kappa)",
                                     greater_than(0))
    penalty: str = option(DEFAULT_PENALTY, "overlap -> acceptance link: kappa (one kappa at every draft "
                          "step), kappa_step (a kappa per step: critical_entries * "
                          "s**critical_step_exponent, or a calibration's per-step fit), "
                          "kappa_lk (kappa_step scaled by ((L/K)/16)**critical_lk_exponent, or a "
                          "calibration's fit of it) or none (zero penalty: a reuse policy keeps "
                          "fresh's acceptance; critical_* and the overlap have no effect)",
                          one_of(*PENALTIES))
    critical_step_exponent: float = option(0.0, "penalty kappa_step / kappa_lk: kappa at draft "
                                           "step s is critical_entries * s**this",
                                           in_range(-10, 10))
    critical_lk_exponent: float = option(0.0, "penalty kappa_lk: kappa scales with ((context / "
                                         "top-k) / 16)**this (> 0: the entries lost at large L/K "
                                         "matter less)", in_range(-5, 5))
    policy_rates: dict[str, tuple[float, ...]] = option(
        {}, "measured per-position rates that replace the model for a policy",
        each(each(in_range(0, 1))))


@dataclass(frozen=True, slots=True)
class CalibrationSpec:
    """Efficiency factors of the cost model, and the measured row they were fitted on."""

    ROLE: ClassVar[str] = "model"

    mem_efficiency: float = option(0.7, "achieved share of HBM bandwidth", unit_interval_open_low)
    compute_efficiency: float = option(0.5, "achieved share of tensor FLOP/s outside the GEMMs "
                                       "(sparse MLA, indexer logits, LM head, linear-attention "
                                       "mixing)", unit_interval_open_low)
    gemm_efficiency: float = option(1.0, "multiplier on the GEMMs' tensor rate from public "
                                    "kernel tables (mtpsim.models.gemm_rates; 1 = DeepGEMM's "
                                    "published H800 figures)", in_range(0.05, 4.0))
    comm_efficiency: float = option(0.7, "achieved share of NVLink bandwidth",
                                    unit_interval_open_low)
    overhead_ms: float = option(1.0, "fixed host/launch cost of every engine step", _nonneg)
    eager_overhead_ms: float = option(2.0, "extra cost of a step that runs outside CUDA graphs",
                                      _nonneg)
    host_us_per_request: float = option(12.0, "host CPU time per request in a step (scheduler, "
                                        "output update, input preparation), µs; hidden behind "
                                        "the GPU under async scheduling", in_range(0, 1e5))
    frontend_ms_per_request: float = option(0.0, "API-server event-loop time per request before "
                                            "the engine sees it (HTTP, request validation, "
                                            "input processing), ms; it takes turns with the "
                                            "output slices on the same loop; each API server "
                                            "(engine.api_server_count) takes its share in order; "
                                            "without max_concurrency only",
                                            in_range(0, 1e4))
    frontend_us_per_chunk: float = option(0.0, "API-server time per streamed output chunk (one "
                                          "request's tokens of one engine step: output "
                                          "processing, detokenization, the SSE message), µs; "
                                          "the server streams in step order, in slices of 128 "
                                          "with admissions between, so when it falls behind, "
                                          "tokens reach the client late and waiting requests "
                                          "are admitted late; without max_concurrency only",
                                          in_range(0, 1e5))
    clean_row_gbps: float = option(16.0, "engine.indexer_clean_logits: GB/s at which one warp "
                                   "of DeepGEMM's fill kernel writes its logits row (one row per "
                                   "warp, 8 warps per SM; the step's fill takes at least its "
                                   "busiest warp's rows at this rate)", in_range(0.01, 1e5))
    moe_imbalance: float = option(1.3, "expert parallelism: the busiest GPU's routed tokens over "
                                  "the mean (1 = uniform routing)", in_range(1, 16))
    fit: tuple[str, ...] = option(("mem_efficiency", "compute_efficiency"),
                                  "factors `mtpsim calibrate` fits", each(one_of(*FITTABLE)))
    fit_policy: str = option("fresh", "policy of the measured row to fit")
    fit_metrics: tuple[str, ...] = option(("output_throughput", "median_tpot_ms"),
                                          "measured metrics the fit matches")
    measured_source: str = option("", "where the measured rows come from", role="label")
    measured: dict[str, dict[str, float | tuple[float, ...]]] = option(
        {}, "policy -> vLLM bench key -> measured value")
    file: str = option("", "calibration fitted from real traces (mtpsim simulate --trace ... "
                       "--save-calibration; relative to the experiment file's folder, or to the "
                       "current folder in a --set): replaces the acceptance model and the "
                       "roofline step cost", path=True)
    probe_s: float = option(0.0, "machine-speed probe wall seconds (mtpsim probe) of the machine "
                            "predicted for: the fitted step costs are rescaled by it over the "
                            "calibration's own probe figure (0: not rescaled)", _nonneg)


# reference.weights values that name weights rather than give a path: the shipped sizes
# (mtpsim.engine.weights.NAMED) and the server's random-init test model (TINY_RANDOM)
REFERENCE_WEIGHT_NAMES = ("builtin", "base", "small", "large", "random-tiny")


@dataclass(frozen=True, slots=True)
class ReferenceSpec:
    """The reference PyTorch engine (`mtpsim run-real`)."""

    ROLE: ClassVar[str] = "runner"

    weights: str = option("builtin", "a shipped size: 'builtin' (= 'base', 4.5 M parameters), "
                          "'small' or 'large' when their weights are present; or a path to a "
                          ".safetensors file with its .json sidecar (relative to the experiment "
                          "file's folder, or to the current folder in a --set)",
                          path=True, names=REFERENCE_WEIGHT_NAMES)
    device: str = option("auto", "where it runs", one_of("auto", "cpu", "cuda"))
    threads: int = option(0, "torch threads (0 = torch's default); a run refuses more than "
                          "the cores it may use", in_range(0, MAX_THREADS))
    clock: str = option("wall", "time base of every timing: wall, or cpu (the serving thread's "
                        "CPU time, which other processes on a shared machine do not inflate; "
                        "waits for arrivals advance it by the wait; CPU device only)",
                        one_of("wall", "cpu"))


@dataclass(frozen=True, slots=True)
class VllmSpec:
    """`vllm serve` as the real-mode runner launches it."""

    ROLE: ClassVar[str] = "runner"

    extra_args: tuple[str, ...] = option((), "extra command-line arguments")
    env: dict[str, str] = option({}, "extra environment variables")
    startup_timeout_s: float = option(1800.0, "how long to wait for the server",
                                      greater_than(0))
    port: int = option(0, "server port (0 = a free one)", in_range(0, 65535))
    compilation_mode: int = option(0, "torch.compile mode in --compilation-config (0 = off)",
                                   in_range(0, 3))
    enable_prefix_caching: bool = option(False, "prefix caching (off in the PR's benchmark)")
    stop_timeout_s: float = option(30.0, "SIGTERM-to-SIGKILL grace when stopping the server",
                                   greater_than(0))
    distributed_executor_backend: str = option(
        "", "vLLM's --distributed-executor-backend ('' = vLLM's choice; 'ray' spreads tp x pp "
        "over the Ray cluster's nodes)", one_of("", "mp", "ray"))


def _check_priors(value: dict[str, str]) -> str | None:
    from mtpsim.uncertainty.priors import check_priors

    return check_priors(value)


@dataclass(frozen=True, slots=True)
class UncertaintySpec:
    """Priors of the unmeasured parameters and the noise model (`--uncertainty N`)."""

    ROLE: ClassVar[str] = "prior"

    priors: dict[str, str] = option({}, "parameter -> prior, e.g. critical_entries = "
                                    "\"loguniform(4, 32)\" (defaults: docs/uncertainty.md)",
                                    _check_priors)
    interval: float = option(0.9, "central probability of the reported intervals",
                             in_range(0.5, 0.99))
    summary: str = option("", "a saved --uncertainty summary of this spec (relative to the "
                          "file's folder, or to the current folder in a --set; "
                          "scripts/headline_figures.py --regenerate-uncertainty): a plain "
                          "simulate quotes its verdict first while the spec is unchanged",
                          role="label", path=True)
    rope_timing_pct: float = option(0.5, "region of practical equivalence of a timing delta, "
                                    "± % (inside it: no practical difference)", _PCT_SD)
    rope_acceptance_length: float = option(0.01, "region of practical equivalence of an "
                                           "acceptance-length delta, ±", _nonneg)
    paired: bool = option(True, "every policy of a draw on the same random numbers (the "
                          "expected effect); false: each its own seed, so a delta carries the "
                          "noise of one A/B run (for scoring against one measured run)")
    timing_noise_pct: float = option(2.0, "run-to-run SD of a measured timing figure, % "
                                     "(conditioning on measured rows)", in_range(1e-6, 1000))
    row_timing_correlation: float = option(
        0.8, "correlation (magnitude) of one measured row's throughput and TPOT errors (one run: "
        "a fast run shows both); assumed", in_range(0.0, 0.95))
    row_acceptance_correlation: float = option(
        0.3, "correlation (magnitude) of one measured row's acceptance-length error with its "
        "timing errors; assumed", in_range(0.0, 0.95))
    acceptance_noise: float = option(0.0, "SD of a measured acceptance length (0 = the "
                                     "placebo noise floor of the measured rows, else 0.01)",
                                     _nonneg)
    mc_se_target: float = option(0.1, "Monte Carlo SE, points, that the conditioned timing-delta "
                                 "interval ends are drawn to (adaptive importance sampling adds "
                                 "draws until it is met or max_draws is reached)", greater_than(0))
    max_draws: int = option(2048, "draws of a conditioned --uncertainty run at most, prior draws "
                            "and adaptive stages together (at or below --uncertainty N: the "
                            "prior draws alone)", in_range(0, 4096))
    discrepancy_pct: float = option(3.0, "model-discrepancy SD of timings inside the "
                                    "calibrated range, %", _PCT_SD)
    extrapolation_pct: float = option(4.0, "added timing SD per unit of distance outside the "
                                      "calibrated range (octaves of k, context, top-k, batch), %",
                                      _PCT_SD)
    acceptance_extrapolation_pct: float = option(
        3.0, "added SD of acceptance length - 1 per unit of distance (context: see below), %",
        _PCT_SD)
    context_acceptance_extrapolation_pct: float = option(
        35.0, "added SD of acceptance length - 1 per octave of context beyond a trace "
        "calibration's range, % (a fitted ln-context trend extrapolates worst)", _PCT_SD)
    effect_extrapolation_pct: float = option(
        25.0, "added log-SD of a policy's effect against the first policy per unit of "
        "distance, %", _PCT_SD)
    effect_acceptance_extrapolation_pct: float = option(
        8.0, "added SD of a policy's acceptance-length change against the first policy per "
        "unit of distance, % of the first policy's acceptance length - 1 (additive, so a "
        "near-zero predicted change widens too)", _PCT_SD)
    context_effect_acceptance_extrapolation_pct: float = option(
        15.0, "the same per octave of context beyond a trace calibration's range, %", _PCT_SD)
    probe_residual_pct: float = option(
        12.0, "timing SD left after rescaling a calibration by the machine-speed probe, % "
        "(benchmarks/probe_drift.py on the 2-core dev VM: 11.9 % wall, 5.9 % CPU clock)", _nonneg)
    machine_pct: float = option(40.0, "timing SD when the machine differs from the "
                                "calibration's (CPU model, GPU, threads, TP), %", _PCT_SD)
