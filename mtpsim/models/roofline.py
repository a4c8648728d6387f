"""Roofline step cost: the time of one engine step as a sum of named phases (mtpsim.result.PHASES)
from the model and GPU presets, for simulations without a calibration file.

Every phase is a roofline over the model preset on `engine.tp` GPUs of the hardware preset:
for each kernel group, time = max(bytes / (HBM bandwidth * mem_efficiency),
FLOPs / (peak * compute_efficiency), kernels * kernel_floor), except the GEMMs (linear layers,
experts): each is the blend of its bytes' time and its tensor time from public kernel tables
(mtpsim.models.gemm_rates: tiles and waves over the SMs, times 1 / gemm_efficiency); TP all-reduces add
bytes / (NVLink * comm_efficiency) + a fixed latency; each step adds `overhead_ms` (and
`eager_overhead_ms` when it runs outside CUDA graphs). Quantities are per GPU. The equations and
their assumptions are written out in docs/simulator.md.

What the layers are comes from the model's family (mtpsim.models.families): the roofline prices
each layer kind once and multiplies by the family's count of it (`Stack`).

A `StepShape` (mtpsim.models.cost) describes a batch; its fields may be numpy arrays over
consecutive steps (bulk advance), so one call prices many steps at once. Parameters: the spec's
`[calibration]` efficiency factors and overheads, over the model and hardware presets.
"""

from __future__ import annotations

import functools
import math
from dataclasses import field

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.models import gemm_rates
from mtpsim.models.cost import Num, StepShape
from mtpsim.models.families import Stack, family_of
from mtpsim.models.families.layers import (
    LINEAR_CHUNK,
    gemm_shapes,
    layer_params,
    linear_flops,
    linear_state_bytes,
)
from mtpsim.policies import traits
from mtpsim.result import PHASES
from mtpsim.spec import Experiment, ModelSpec

# bytes per parameter: (routed/shared experts, other linear layers); embeddings are bf16.
# nvfp4: 4-bit values + one fp8 scale per 16; mxfp4: 4-bit values + one 8-bit (E8M0) scale per 32.
WEIGHT_BYTES = {"bf16": (2.0, 2.0), "fp8": (1.0, 1.0), "nvfp4": (0.5625, 1.0),
                "mxfp4": (0.53125, 1.0)}
# fp8 checkpoints' weight_scale_inv: one fp32 per 128 x 128 block (quantization_config
# weight_block_size [128, 128]), as a share of the fp8 bytes
FP8_BLOCK_SCALE = 4 / (128 * 128)
# cudagraph_mode -> (eager share of steps with prefill, eager share of pure-decode steps)
EAGER_SHARE = {"none": (1.0, 1.0), "piecewise": (0.5, 0.5), "full_decode_only": (1.0, 0.0),
               "full": (0.0, 0.0), "full_and_piecewise": (0.5, 0.0)}
# cudagraph_mode -> eager share of the MTP drafter's forwards under the capture ceiling: vLLM 0.33.0
# gives the drafter PIECEWISE graphs when the mode has a mixed part and none otherwise
# (v1/spec_decode/llm_base_proposer.py `initialize_cudagraph_keys`, lines 420-435); PIECEWISE
# counts as EAGER_SHARE's 0.5 (assumed)
DRAFTER_EAGER_SHARE = {"none": 1.0, "piecewise": 0.5, "full_decode_only": 1.0, "full": 0.5,
                       "full_and_piecewise": 0.5}
# kernels per layer of each group (sets the small-batch floor)
KERNELS = {"attn_gemm": 5, "dense_mlp": 2, "moe": 4, "indexer_gemm": 2, "attention": 2,
           "indexer": 2, "topk": 1, "norm": 3, "linear_gemm": 4, "linear_attn": 2}
SAMPLING_KERNELS = 4
# step arrays at least this long have their GEMMs priced once per distinct token count (`_gemms`)
UNIQUE_MIN_STEPS = 256
# The top-k over a query's L indexer logits (fp32) is a radix select: 32-bit keys, 8-bit digits,
# so 4 histogram passes over the row after the logits kernel writes it (assumed; vLLM PR #33680's
# decode kernel uses "a 5-pass radix selection").
TOPK_PASSES = 4
# Bytes each token's hidden state moves per layer outside the GEMMs, in units of hidden_size
# (bf16): two fused residual-add + RMSNorm passes (read x and residual, write both: 8 each), the
# activation quantization before the fp8/fp4 GEMMs (3), the MoE combine reading its 8 expert
# outputs and writing the sum (18), SwiGLU and the small attention-side passes (~3). Assumed
# from vLLM's DeepSeek forward; it matters for prefill chunks (thousands of tokens), not decode.
ELEMENTWISE_HIDDEN_BYTES = 40
# FlashMLA's sparse fp8 decode kernel runs h_q = 64 or 128 query heads only: vLLM 0.33.0 pads a
# rank's heads up to that (`FlashMLASparseImpl._compute_fp8_decode_padded_heads`,
# v1/attention/backends/mla/flashmla_sparse.py), so under TP4 / TP8 (32 / 16 heads) a decode or
# verify query multiplies as many FLOPs as 64 heads would.
FP8_DECODE_HEADS = (64, 128)
# Top-p / top-k masking of one sampled row, seconds per logit on an H100 (HBM 3.35 TB/s). PyTorch's
# sort: 16.312 ms for 1,024 rows x 131,072 logits, every row top-p, in vLLM PR #33538's table (H100
# as in its predecessor PR #25824). The kernels relative to the sort on one GPU, from PR #40376's
# table (512 rows x 131,072, every row top-p: sort 6.150 ms, Triton 2.013, FlashInfer 0.372), the
# Triton top-p path then made 25-40 % faster by PR #42191 (x 0.7 assumed). Other GPUs: scaled by
# HBM bandwidth. `engine.sampler` "sort" (vLLM <= 0.14, `apply_top_k_top_p` sorts every row) pays
# the sort on every sampled row; "kernels" (0.33.0) FlashInfer on the sampler's rows and Triton
# on the rejection sampler's draft rows (`apply_sampling_constraints`, v1/sample/rejection_sampler.py).
H100_HBM_TBPS = 3.35
_SORT = 16.312e-3 / (1024 * 131072)
TOPP_S_PER_LOGIT = {"sort": _SORT, "flashinfer": _SORT * 0.372 / 6.150,
                    "triton": _SORT * 2.013 / 6.150 * 0.7}
# FlashMLA's sparse MLA kernels at their best on Hopper, as a share of the GPU's dense BF16 peak
# (README of deepseek-ai/FlashMLA: "410 TFLOPS in compute-bound configuration on H800 SXM5" for
# the FP8-cache sparse decode kernel, "up to 640 TFlops" for the BF16 sparse kernel that vLLM also
# runs over a bf16 cache; H800 SXM5's dense BF16 peak is 989 TFLOP/s, as the H100's and H200's).
# The attention's FLOPs never run faster than that, whatever calibration.compute_efficiency says;
# Blackwell is left to the efficiency (the README's B200 figure, 350 TFLOPS, is "not really
# optimized yet", and vLLM 0.33.0 has other sparse MLA backends there).
FLASHMLA_SM90_SHARE = {"fp8": 410 / 989, "bfloat16": 640 / 989}
# Dense MLA (family `mla`, DeepSeek-V3/R1) on Hopper, as shares of the dense BF16 peak (989 TFLOP/s
# on H800 SXM5, H100 and H200). Decode (absorbed MQA over the latent cache; vLLM 0.33.0 tries
# FLASH_ATTN_MLA then FLASHMLA on SM90, `_get_backend_priorities` in platforms/cuda.py): FlashMLA's
# README, "The dense MLA decoding kernel achieves up to 3000 GB/s in memory-bound configuration
# and 660 TFLOPS in computation-bound configuration on H800 SXM5 with CUDA 12.8". Prefill (vLLM's
# non-absorbed MHA over up-projected keys and values, model_executor/layers/attention/
# mla_attention.py "Compute Friendly Approach", FlashAttention varlen on SM90): FlashAttention-3
# (Shah et al. 2024) "FP16 reaching up to 740 TFLOPs/s (75% utilization)" on H100. Blackwell is
# left to calibration.compute_efficiency (FLASHINFER_MLA / CUTLASS_MLA decode, FlashInfer or
# TRT-LLM ragged prefill: no published figure read).
DENSE_MLA_SM90_SHARE = {"decode": 660 / 989, "prefill": 740 / 989}
# FlashMLA's dense decode kernel tiles a request's (query rows x heads) by 64 rows (block_M): at
# 16 heads per rank (TP8) one decode row multiplies as many FLOPs as 64 heads would (assumed the
# same for the Blackwell kernels)
DENSE_DECODE_TILE = 64
# How many top-k slots FlashMLA's Hopper kernels multiply per query row. Its DeepSeek-V3.2 FP8
# sparse decode kernel (csrc/sm90/decode/sparse_fp8/splitkv_mla.cuh, `ModelType::V32`) loops over
# all `topk` slots of a row whatever its context (the row's length is read for MODEL1 only), and
# the BF16 sparse kernel (csrc/sm90/prefill/sparse/phase1.cuh) runs topk / B_TOPK blocks unless
# the caller passes `topk_length` (then ceil(length / B_TOPK)). A -1 slot is masked, not skipped:
# its MMA and softmax run, its gather does not reach HBM (FlashMLA PR #196 measured on Blackwell:
# "tensor-pipe busy cycles are a constant ~1024 cycles per k-block whether or not the block
# contains any valid index ... while DRAM bytes stay identical"). So on Hopper a row shorter than
# top-k costs the FLOPs of the full width and the bytes of its valid keys (`_flop_keys`).
# Bytes per hidden value of a token the MoE dispatch all-gathers under DP (`_moe_comm`): the
# experts' input quantized before the gather, fp8 with one fp32 scale per 1 x 128 block for an fp8
# checkpoint, nvfp4 with one fp8 scale per 16; bf16 otherwise (mxfp4 on Hopper is weight-only).
DISPATCH_BYTES = {"fp8": 1 + 4 / 128, "nvfp4": 0.5 + 1 / 16}
# vLLM 0.33.0's default capture ceiling in tokens (`VllmConfig._set_cudagraph_sizes`, config/vllm.py):
# min(max_num_seqs x (1 + k) x 2, 512; 1024 on Blackwell), capped at max_num_batched_tokens; uniform
# decode batches are captured up to it. A step over it runs without CUDA graphs.
GRAPH_MAX_TOKENS, GRAPH_MAX_TOKENS_BLACKWELL = 512, 1024
# vLLM before PR #33568 (opened 2026-02-02, "[Perf] Disable clean_logits in deepgemm fp8_mqa_logits
# kernel"; 0.13.0's utils/deep_gemm.py passes clean_logits=True to fp8_paged_mqa_logits and
# leaves fp8_mqa_logits at DeepGEMM's default, true) had DeepGEMM's smxx_clean_logits (v2.1.1,
# deep_gemm/include/deep_gemm/impls/smxx_clean_logits.cuh) write -inf (fp32) into every column
# of every indexer logits row outside its keys: a decode row's logits are max_model_len wide
# (`[B x next_n, max_model_len]`), a prompt row's as wide as all the step's prompt keys (one
# chunk: the workspace holds 40 x max_model_len keys). The kernel runs one block per SM, splits
# the rows over the SMs and then over its warps, and each warp's elected thread issues the 32 KB
# bulk stores of its rows in turn (`engine.indexer_clean_logits`, `_clean_logits`).
CLEAN_WARPS_PER_SM = 8


@functools.lru_cache(maxsize=16)
def _mtp_indexer(m: ModelSpec) -> bool:
    """Whether the model's MTP layer runs its own DSA indexer (False for a dense family)."""
    return family_of(m).mtp_layer(m).indexer


@functools.lru_cache(maxsize=16)
def _dense(m: ModelSpec) -> bool:
    """Whether the model's attention reads every earlier key (family `mla`)."""
    return family_of(m).dense_attention


@functools.lru_cache(maxsize=16)
def _family_stack(m: ModelSpec) -> Stack:
    """The model's layer counts by kind; an --uncertainty run builds ~450 CostModels of one
    model, and counting its layers each time was 1.5 % of the run's profile."""
    return family_of(m).stack(m)


def kv_cache_dtype(exp: Experiment) -> str:
    """The MLA latent cache's dtype, as vLLM 0.33.0 resolves `--kv-cache-dtype auto`: the
    checkpoint's KV scheme (`utils/torch_utils.py` `resolve_kv_cache_dtype_string`), else the
    model dtype, bf16 (`model_executor/models/config.py` `DeepseekV32ForCausalLM` no longer maps
    auto to fp8). deepseek-ai's FP8 checkpoint declares none, so its cache is bf16; the 4-bit
    (ModelOpt) checkpoints are assumed to declare FP8. fp8 is the fp8_ds_mla layout."""
    chosen = exp.engine.kv_cache_dtype
    if chosen != "auto":
        return chosen
    return "fp8" if exp.model.quantization in ("nvfp4", "mxfp4") else "bfloat16"


def mla_bytes_per_token(exp: Experiment) -> float:
    """One layer's MLA cache bytes per token: the model's fp8_ds_mla record (656 B for
    DeepSeek-V3.2: 512 fp8 + 4 fp32 scales + 64 bf16 RoPE), or the bf16 latent and RoPE."""
    m = exp.model
    if kv_cache_dtype(exp) == "fp8":
        return float(m.kv_bytes_per_token)
    return 2.0 * (m.kv_lora_rank + m.qk_rope_head_dim)


def expert_dtype(quantization: str, mxfp4_tflops: float) -> str:
    """Tensor-core rate the routed experts' GEMMs run at. MXFP4 without MX tensor cores (Hopper,
    MI300X) is weight-only: vLLM dequantizes to bf16 inside the MoE kernel."""
    if quantization == "mxfp4":
        return "mxfp4" if mxfp4_tflops > 0 else "bf16"
    return {"bf16": "bf16", "fp8": "fp8", "nvfp4": "fp4"}[quantization]


@dataclass(frozen=True, slots=True)
class CostModel:
    """Prices steps for one experiment and policy."""

    exp: Experiment
    policy: str
    # derived once: a simulation prices thousands of steps
    _tp: int = field(init=False, repr=False, compare=False)
    _p: dict[str, float] = field(init=False, repr=False, compare=False)
    _rates: dict[str, float] = field(init=False, repr=False, compare=False)
    _hbm: float = field(init=False, repr=False, compare=False)
    _floor_us: float = field(init=False, repr=False, compare=False)
    _dp: int = field(init=False, repr=False, compare=False)
    _shapes: dict = field(init=False, repr=False, compare=False)
    _wbytes: dict = field(init=False, repr=False, compare=False)
    _compute: dict = field(init=False, repr=False, compare=False)
    _stack: Stack = field(init=False, repr=False, compare=False)
    _mla: float = field(init=False, repr=False, compare=False)  # MLA cache bytes/token/layer
    _graph_max: int = field(init=False, repr=False, compare=False)  # CUDA-graph ceiling, tokens
    _topp: tuple | None = field(init=False, repr=False, compare=False)  # s/row: sampler, drafts
    _attn_rate: float = field(init=False, repr=False, compare=False)  # sparse MLA FLOP/s
    _full: tuple = field(init=False, repr=False, compare=False)  # (decode, prompt) rows full width
    _sms: int = field(init=False, repr=False, compare=False)  # SMs, for the GEMMs' waves
    _gemm_peak: dict = field(init=False, repr=False, compare=False)  # dtype -> FLOP/s x gemm_eff.
    _short: tuple = field(init=False, repr=False, compare=False)  # (dense MHA, indexer skipped)
    _clean: int = field(init=False, repr=False, compare=False)  # logits row width filled, 0: none

    def __post_init__(self) -> None:
        hw, c = self.exp.hardware, self.exp.calibration
        peaks = {"bf16": hw.bf16_tflops, "fp8": hw.fp8_tflops, "fp4": hw.fp4_tflops,
                 "mxfp4": hw.mxfp4_tflops}
        for name, value in (("_tp", self.exp.engine.tp), ("_p", layer_params(self.exp.model)),
                            ("_rates", {d: peak * 1e12 * c.compute_efficiency
                                        for d, peak in peaks.items()}),
                            ("_hbm", hw.hbm_tbps * 1e12 * c.mem_efficiency),
                            ("_floor_us", hw.kernel_floor_us), ("_dp", self.exp.engine.dp)):
            object.__setattr__(self, name, value)
        m = self.exp.model
        b_exp, b_lin = WEIGHT_BYTES[m.quantization]
        lin = "bf16" if m.quantization == "bf16" else "fp8"
        exp_dtype = expert_dtype(m.quantization, hw.mxfp4_tflops)
        # weight bytes per parameter and tensor rate of each GEMM kind ("expert" is the experts')
        object.__setattr__(self, "_wbytes", {lin: b_lin, "expert": b_exp})
        object.__setattr__(self, "_compute", {lin: lin, "expert": exp_dtype})
        object.__setattr__(self, "_shapes", gemm_shapes(m, self.exp.engine.tp, lin))
        object.__setattr__(self, "_stack", _family_stack(m))
        object.__setattr__(self, "_mla", mla_bytes_per_token(self.exp))
        object.__setattr__(self, "_graph_max", cudagraph_max_tokens(self.exp))
        object.__setattr__(self, "_topp", topp_seconds_per_row(self.exp))
        object.__setattr__(self, "_attn_rate", sparse_mla_rate(self.exp, self._rates["bf16"]))
        object.__setattr__(self, "_full", (full_width_rows(self.exp, False),
                                           full_width_rows(self.exp, True)))
        object.__setattr__(self, "_sms", hw.sms)
        object.__setattr__(self, "_gemm_peak", {d: peak * 1e12 * c.gemm_efficiency
                                                for d, peak in peaks.items()})
        dense_short = self.exp.engine.dense_short_prefill and not _dense(m)
        object.__setattr__(self, "_short", (dense_short, dense_short and hw.architecture in (
            "hopper", "blackwell")))
        # max_model_len as vLLM resolves it (mtpsim.models.memory.max_model_len)
        object.__setattr__(self, "_clean", (self.exp.engine.max_model_len
                                            or m.max_position_embeddings)
                           if self.exp.engine.indexer_clean_logits and not _dense(m) else 0)

    # ---- derived constants -------------------------------------------------------------------
    def _params(self) -> dict[str, float]:
        return self._p

    def _mtp_layers(self) -> int:
        """MTP layers vLLM loads: none without a speculative config (k = 0)."""
        return self.exp.model.num_mtp_layers if self.exp.k > 0 else 0

    def weight_bytes_per_gpu(self) -> float:
        """Resident weights on one GPU after vLLM 0.33.0 loads them (target + MTP layers); with
        `engine.pp` stages each GPU holds its stage's share of the layers (the embeddings stay
        whole on their stage). Embedding and LM head are bf16 and vocab-parallel; the MTP
        layer's copies of them are dropped for the target's (`llm_base_proposer.py`
        `_maybe_share_embeddings`). See docs/hardware.md, "Memory"."""
        m, p, tp = self.exp.model, self._params(), self._tp
        b_exp, b_lin = WEIGHT_BYTES[m.quantization]
        if b_lin == 1.0:  # fp8 linears carry an fp32 scale per 128 x 128 block
            b_lin *= 1 + FP8_BLOCK_SCALE
        if m.quantization == "fp8":
            b_exp *= 1 + FP8_BLOCK_SCALE
        mtp = self._mtp_layers()
        return (self._layered_weights(mtp, b_exp, b_lin) / self.exp.engine.pp
                + 2 * p["embed"] / tp * 2)

    def _layered_weights(self, mtp: int, b_exp: float, b_lin: float) -> float:
        """Every layer's weights on one GPU: the family's layers of each kind and `mtp` MTP
        layers (MLA + DSA + MoE, and the eh_proj). MLA's q_a/kv_a projections and the indexer
        are replicated, the rest TP-sharded. The indexer's wk and weights_proj are fused and
        upcast to bf16 at load (`deepseek_v2.py` `Indexer`), and MLA keeps bf16 copies of
        kv_b_proj's two halves (`mla_attention.py` W_UK_T, W_UV) beside kv_b_proj itself."""
        m, p, tp, st = self.exp.model, self._params(), self._tp, self._stack
        idx_k = m.hidden_size * (m.index_head_dim + m.index_n_heads)
        absorbed = m.kv_lora_rank * m.num_heads / tp * (m.qk_nope_head_dim + m.v_head_dim) * 2
        w = ((st.mla + mtp) * ((p["attn_rep"] + p["attn_sh"] / tp) * b_lin + absorbed)
             + (st.indexer + mtp * _mtp_indexer(m)) * ((p["indexer"] - idx_k) * b_lin + idx_k * 2)
             + st.dense * p["dense"] / tp * b_lin
             + (st.moe + mtp) * ((m.num_routed_experts / self._dp + m.num_shared_experts)
                                 * p["expert"] / tp * b_exp + p["router"] * 2)
             + mtp * p["eh_proj"] * b_lin)
        if st.linear:
            w = w + st.linear * (p["linear_rep"] + p["linear_sh"] / tp) * b_lin
        return w

    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes of one token on one GPU: the MLA latent of every attention layer and
        the indexer keys of every indexer layer (MTP layers included when they run); MLA's
        latent is not split by TP (each rank holds it whole), pipeline stages split the layers."""
        m, mtp, st = self.exp.model, self._mtp_layers(), self._stack
        return ((st.mla + mtp) * self._mla
                + (st.indexer + mtp * _mtp_indexer(m)) * m.indexer_bytes_per_token) / self.exp.engine.pp

    def state_bytes_per_request(self) -> float:
        """Recurrent-state bytes one request holds on one GPU (its linear-attention layers, heads
        split by TP): k + 1 slots per layer, as vLLM 0.33.0 keeps one state per speculative
        position to roll rejected drafts back (`spec_state_indices_tensor` [batch, num_spec + 1]
        in v1/attention/backends/gdn_attn.py); 0 for a family without linear attention."""
        st = self._stack
        if not st.linear:
            return 0.0
        return (st.linear * linear_state_bytes(self.exp.model) / self._tp * (self.exp.k + 1)
                / self.exp.engine.pp)

    # ---- kernel groups -----------------------------------------------------------------------
    def _roof(self, nbytes: Num, flops_time: Num, kernels: float) -> Num:
        t_mem = nbytes / self._hbm
        floor = kernels * self._floor_us * 1e-6
        if isinstance(t_mem, np.ndarray) or isinstance(flops_time, np.ndarray):
            return np.maximum(np.maximum(t_mem, flops_time), floor)
        return max(t_mem, flops_time, floor)  # scalar steps: plain floats are much faster

    def _rate(self, dtype: str) -> float:
        return self._rates[dtype]

    def _gemms(self, tokens: Num, n_attn: int, n_dense: int, n_moe: int, n_indexer: int,
               extra_params: float = 0.0) -> Num:
        """`_gemms_of`, priced once per distinct token count of a long array of steps and
        gathered: the steps of a run hold few (a decode batch's requests x (k + 1): 33 counts
        over pr47352's 5,902 steps), and every operation of `_gemms_of` is elementwise in
        `tokens`, so each step gets the very number it would get in the whole array."""
        if isinstance(tokens, np.ndarray) and tokens.size >= UNIQUE_MIN_STEPS:
            flat = tokens.ravel()
            values, where = np.unique(flat, return_inverse=True)
            if values.size * 4 <= flat.size:
                out = self._gemms_of(values, n_attn, n_dense, n_moe, n_indexer, extra_params)
                return out[where].reshape(tokens.shape)
        return self._gemms_of(tokens, n_attn, n_dense, n_moe, n_indexer, extra_params)

    def _gemms_of(self, tokens: Num, n_attn: int, n_dense: int, n_moe: int, n_indexer: int,
                  extra_params: float = 0.0) -> Num:
        """Linear layers of a stack over `tokens` tokens, each GEMM on its own roofline: its
        weights, its fp8 (bf16) input and bf16 output rows against HBM, its FLOPs against the
        tensor rate. A GEMM with a small K (an expert's down projection under TP8: K = 256)
        writes as many bytes as it multiplies, so it is memory-bound even over thousands of
        tokens, as DeepGEMM's published shapes show (docs/prefill.md). Experts touched follow
        uniform routing; their GEMMs are one grouped GEMM (`_linears`, grouped)."""
        m = self.exp.model
        g = self._shapes
        t = 0.0 * tokens
        if n_attn:
            t = t + n_attn * self._linears(tokens, g["attn"], 1.0)
        if n_indexer:
            t = t + n_indexer * self._linears(tokens, g["indexer"], 1.0)
        if n_dense:
            t = t + n_dense * self._linears(tokens, g["dense"], 1.0)
        if n_moe:
            shapes, rows, copies = self._routed_gemms(tokens)
            t = t + n_moe * (self._linears(rows, shapes, copies, grouped=True)
                             + m.num_shared_experts * self._linears(tokens, g["expert"], 1.0)
                             + self._roof(self._params()["router"] * 2, 0.0, 0))
        if extra_params:
            h = m.hidden_size
            t = t + self._linears(tokens, ((extra_params / h, h, g["lin"]),), 1.0)
        kernels = (n_attn * KERNELS["attn_gemm"] + n_dense * KERNELS["dense_mlp"]
                   + n_moe * KERNELS["moe"] + n_indexer * KERNELS["indexer_gemm"]
                   + (n_attn + n_dense + n_moe) * KERNELS["norm"])
        floor = kernels * self._floor_us * 1e-6
        if isinstance(t, np.ndarray):
            return np.maximum(t, floor) * (tokens > 0)
        return max(t, floor) * (tokens > 0)

    def _linears(self, rows: Num, shapes: tuple, copies: Num, grouped: bool = False) -> Num:
        """Sum over `shapes` ((K, N, dtype) per GPU) of one GEMM each over `rows` rows, whose
        weights are read `copies` times (experts touched; 1 for a dense layer). Each GEMM is
        `gemm_rates.blend` of its bytes at HBM x mem_efficiency (weights, fp8 or bf16 input rows,
        bf16 output rows) and its tensor time from DeepGEMM's tables (`gemm_rates.tensor_seconds`:
        64- or 128-row tiles and the waves they take over the SMs, at the fitted efficiency x
        `gemm_efficiency`). `grouped`: the experts' grouped GEMM, `copies` groups of rows / copies
        rows on average, each padded to its tiles."""
        total = 0.0 * rows
        if grouped:
            if isinstance(copies, np.ndarray):
                groups = np.maximum(copies, 1e-12)
            else:
                groups = max(copies, 1e-12)
            m = rows / groups
        else:
            groups, m = 1.0, rows
        for kk, nn, dtype in shapes:
            b_w = self._wbytes[dtype]
            act = 2.0 if dtype == "bf16" else 1.0
            t_mem = (copies * kk * nn * b_w + rows * (kk * act + nn * 2.0)) / self._hbm
            t_c = gemm_rates.tensor_seconds(groups, m, nn, kk, self._sms,
                                            self._gemm_peak[self._compute[dtype]], grouped)
            total = total + gemm_rates.blend(t_c, t_mem)
        return total

    def _routed(self, tokens: Num) -> tuple[Num, Num]:
        """One GPU's routed-expert work per MoE layer: (experts' worth of weights read, tokens
        x experts' worth of FLOPs), uniform routing. The MoE layers of all `dp` ranks run as one
        batch padded to the largest rank's (the simulated rank is the busiest: dp x its tokens;
        vLLM pads DP batches to the max across ranks). Without EP each of the dp x tp GPUs holds
        a 1/(dp x tp) slice of every expert (vLLM flattens MoE TP across DP:
        `model_executor/layers/fused_moe/config.py` `FusedMoEParallelConfig.make`, ~line 1198);
        with EP it holds e/(dp x tp) whole experts, and the busiest GPU gets
        `calibration.moe_imbalance` x the mean share of token-expert pairs."""
        m, tp, dp = self.exp.model, self._tp, self._dp
        e, k = m.num_routed_experts, m.num_experts_per_tok
        everyone = dp * tokens
        touched = e * (1.0 - (1.0 - k / e) ** everyone)
        if not self.exp.engine.ep:
            return touched / (tp * dp), everyone * k / (tp * dp)
        imb = self.exp.calibration.moe_imbalance
        return touched / (tp * dp), everyone * k / (tp * dp) * imb

    def _routed_gemms(self, tokens: Num) -> tuple[tuple, Num, Num]:
        """The routed experts' GEMMs on one GPU as (shapes, rows, weight copies) for `_linears`,
        the same work as `_routed`: without EP a 1/(dp x tp) slice of every touched expert over
        all dp ranks' token-expert pairs; with EP whole experts, e/(dp x tp) of them, over the
        busiest GPU's share of the pairs."""
        m, tp, dp = self.exp.model, self._tp, self._dp
        e, k, h, mi = (m.num_routed_experts, m.num_experts_per_tok, m.hidden_size,
                       m.moe_intermediate_size)
        everyone = dp * tokens
        touched = e * (1.0 - (1.0 - k / e) ** everyone)
        if not self.exp.engine.ep:
            g = tp * dp
            return ((h, 2 * mi / g, "expert"), (mi / g, h, "expert")), everyone * k, touched
        imb = self.exp.calibration.moe_imbalance
        return (((h, 2 * mi, "expert"), (mi, h, "expert")), everyone * k / (tp * dp) * imb,
                touched / (tp * dp))

    def _moe_comm(self, n_moe: int, tokens: Num) -> Num:
        """With dp > 1 a MoE layer exchanges tokens instead of all-reducing, with or without EP,
        through vLLM 0.33.0's default `all2all_backend`, "allgather_reducescatter"
        (`AgRsAll2AllManager`, distributed/device_communicators/all2all.py; without EP
        `all2all_utils.py` falls back to the same "AllGather+ReduceScatter dispatch/combine").
        Dispatch all-gathers every DP rank's tokens, padded to the largest rank's (the simulated
        one), quantized first (`MoEPrepareAndFinalizeNaiveDPEP.prepare`: fp8 values and their
        1 x 128 block scales for an fp8 checkpoint) with each token's top-k weights and ids
        (fp32, int32); combine reduce-scatters the dp x tokens expert outputs in bf16. Ring
        collectives over the dp ranks: each GPU receives (dp - 1) x tokens of each, whatever
        the routing (so no imbalance term; the experts' share of it is in `_routed`)."""
        e, m, hw, c = self.exp.engine, self.exp.model, self.exp.hardware, self.exp.calibration
        if e.dp == 1:
            return 0.0 * tokens
        h = m.hidden_size
        per_token = h * DISPATCH_BYTES.get(m.quantization, 2.0) + m.num_experts_per_tok * 8 + h * 2
        nbytes = (e.dp - 1) * tokens * per_token
        t = n_moe * (2 * hw.allreduce_latency_us * 1e-6
                     + nbytes / (hw.group_gbps(e.dp) * 1e9 * c.comm_efficiency))
        return t * (tokens > 0)

    def _decode_heads(self) -> int:
        """Query heads the fp8 sparse decode kernel computes per rank: the rank's heads padded
        to 64 or 128 (FP8_DECODE_HEADS)."""
        heads = self.exp.model.num_heads / self._tp
        return FP8_DECODE_HEADS[0] if heads <= FP8_DECODE_HEADS[0] else FP8_DECODE_HEADS[1]

    def _flop_keys(self, keys: Num, rows: Num, prefill: bool) -> Num:
        """Top-k slots the kernel multiplies: `rows` x top-k at full width (`full_width_rows`),
        else the valid `keys`."""
        return rows * self.exp.index_topk if self._full[prefill] else keys

    def _attention(self, n_layers: int, keys: Num, rows: Num, q: int = 1) -> Num:
        """Sparse MLA decode / verify over `rows` query rows: each reads its min(context, top-k)
        latent entries (`keys` in all) per layer and multiplies the kernel's slots (`_flop_keys`)
        with its padded heads (`_decode_heads`), so verify tokens cost FLOPs as well as bytes: at
        thousands of queries per step it is compute-bound. A dense family: `_dense_attention`
        (`q` query rows per request)."""
        m = self.exp.model
        if _dense(m):
            return self._dense_attention(n_layers, keys, q)
        nbytes = n_layers * keys * self._mla
        flops = n_layers * self._flop_keys(keys, rows, False) * 2 * self._decode_heads() * (
            2 * m.kv_lora_rank + m.qk_rope_head_dim)
        return self._roof(nbytes, flops / self._attn_rate,
                          n_layers * KERNELS["attention"]) * (keys > 0)

    def _prefill_attention(self, n_layers: int, keys: Num, reads: Num, rows: Num) -> Num:
        """Sparse MLA over prompt chunks as vLLM 0.33.0 runs it (FlashMLASparseImpl in
        v1/attention/backends/mla/flashmla_sparse.py). With >= 32 heads per rank the BF16
        prefill kernel runs on heads padded to a multiple of 64, over the fp8 cache upconverted
        to a bf16 workspace (the chunk's context read in fp8, written in bf16), each query
        gathering its top-k bf16 rows (FlashMLA's "640 TFlops" sparse prefill on H800 at 128
        heads streams those gathers at ~0.8 of HBM bandwidth; at 64 heads they bound it). Below 32 heads
        (TP8) prompt tokens go through the fp8 decode kernel with the decode batch, heads padded
        to 64, each query gathering its top-k keys from HBM. A dense family:
        `_dense_prefill_attention`."""
        m = self.exp.model
        if _dense(m):
            return self._dense_prefill_attention(n_layers, keys, reads, rows)
        heads = m.num_heads / self._tp
        per_key = 2 * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
        if heads < 32:
            padded = self._decode_heads()
            nbytes = n_layers * keys * self._mla
        else:
            padded = math.ceil(heads / 64) * 64
            latent = (m.kv_lora_rank + m.qk_rope_head_dim) * 2
            # an fp8 cache is upconverted to the bf16 workspace first; a bf16 one is read as is
            convert = reads * (self._mla + latent) if self._mla != latent else 0.0 * reads
            nbytes = n_layers * (convert + keys * latent)
        flops = n_layers * self._flop_keys(keys, rows, True) * padded * per_key
        return self._roof(nbytes, flops / self._attn_rate,
                          n_layers * KERNELS["attention"]) * (keys > 0)

    def _short_steps(self, keys: Num, pairs: Num) -> Num:
        """Steps whose prompt chunks all end within top-k (1.0, else 0.0): each prompt row then
        sees min(position + 1, top-k) = position + 1 keys, so the rows' keys sum to their
        query-key pairs. vLLM 0.33.0 runs such a step's prompts as dense MHA
        (`_use_dense_mha_prefill`, model_executor/layers/attention/sparse_mla_attention.py
        ~line 136: every prefill's seq_len <= index_topk; vLLM PR #47327). 0 when
        `engine.dense_short_prefill` is off or the family is dense MLA."""
        if not self._short[0]:
            return 0.0 * keys
        short = (pairs <= keys * (1 + 1e-12)) & (keys > 0)
        return short.astype(float) if isinstance(short, np.ndarray) else float(short)

    def _prompt_attention(self, n_layers: int, keys: Num, reads: Num, rows: Num,
                          pairs: Num) -> Num:
        """Attention over prompt chunks: sparse MLA (`_prefill_attention`), or, in a step whose
        prompts all end within top-k (`_short_steps`), the dense MHA of vLLM 0.33.0
        (MLAAttention.forward_impl, model_executor/layers/attention/mla_attention.py ~line
        986-1030, sends the prefill tokens to `forward_mha`, the decode tokens to sparse MQA):
        FlashAttention varlen over the new tokens' up-projected q/k (192) and v (128) at the
        rank's own heads, no padding and no top-k width (`_dense_prefill_attention`, at most
        FlashAttention-3's 740 TFLOP/s on Hopper). At TP8 a 219-token prompt's rows then cost
        16 heads x 2 x (192 + 128) FLOPs per causal pair where the sparse kernel multiplied 64
        padded heads x 2 x (576 + 512) per slot."""
        sparse = self._prefill_attention(n_layers, keys, reads, rows)
        short = self._short_steps(keys, pairs)
        if not np.any(short):
            return sparse
        dense = self._dense_prefill_attention(n_layers, keys, reads, rows)
        return sparse + short * (dense - sparse)

    def _unscored(self, keys: Num, pairs: Num, num_decode: Num) -> Num:
        """Steps whose prompts the target's indexers do not score (1.0, else 0.0): prompts
        within top-k (`_short_steps`) with no decode token in the step, on NVIDIA GPUs. vLLM
        0.33.0's indexer returns before scoring when the step's MLA metadata says dense MHA and
        num_decode_tokens == 0 (model_executor/layers/sparse_attn_indexer.py ~line 584; CUDA
        only, not the MTP layer's indexer: `enable_short_prefill_scoring_skip`,
        models/deepseek_v32/attention.py ~line 227). With decode tokens in the step every
        prompt row is still scored."""
        if not self._short[1]:
            return 0.0 * keys
        return self._short_steps(keys, pairs) * (num_decode == 0)

    def _dense_rate(self, phase: str) -> float:
        """FLOP/s of dense MLA attention in `phase` ("decode" / "prefill"): the BF16 rate the
        efficiency gives, at most the published best on Hopper (DENSE_MLA_SM90_SHARE)."""
        hw, rate = self.exp.hardware, self._rates["bf16"]
        if hw.architecture != "hopper":
            return rate
        return min(rate, hw.bf16_tflops * 1e12 * DENSE_MLA_SM90_SHARE[phase])

    def _dense_attention(self, n_layers: int, keys: Num, q: int) -> Num:
        """Dense MLA decode / verify (DeepSeek-V3/R1), absorbed: each query row attends every
        earlier key of its request as MQA over the latent (QK over kv_lora_rank + rope = 576
        dims, PV over 512). `keys` sums the rows' contexts; a request's `q` rows (1 + k at
        verify) share one read of its latent cache, so the bytes are keys / q latent entries;
        the FLOPs are per row and key, 2 x (576 + 512) per head, its q x heads rows padded to
        DENSE_DECODE_TILE. Shapes (TP8): 16 heads/rank, q=1 -> 64 head rows; q=2 -> 32 each."""
        m = self.exp.model
        heads = m.num_heads / self._tp
        padded = math.ceil(q * heads / DENSE_DECODE_TILE) * DENSE_DECODE_TILE / q
        nbytes = n_layers * keys / q * self._mla
        flops = n_layers * keys * 2 * padded * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
        return self._roof(nbytes, flops / self._dense_rate("decode"),
                          n_layers * KERNELS["attention"]) * (keys > 0)

    def _dense_prefill_attention(self, n_layers: int, keys: Num, reads: Num, rows: Num) -> Num:
        """Dense MLA prefill as vLLM runs it (the non-absorbed, compute-friendly MHA of
        mla_attention.py): `rows` new tokens attend causally their `keys` query-key pairs in all
        (the earlier context included) with q/k head dims qk_nope + rope = 192 and v 128, so
        2 x (192 + 128) FLOPs per pair and head; the new tokens' k/v come from the kv_b_proj
        GEMM priced with the layer's projections. The earlier context (`reads` - `rows` tokens:
        the chunks' end positions minus their lengths) is read from the latent cache, up-projected
        by kv_b_proj (2 x kv_lora_rank x heads x (nope + v) FLOPs per token, its weights read
        once more) into a bf16 workspace that the attention reads back, per context chunk
        (`_compute_prefill_context`). Shapes (TP8): 16 heads/rank; per context token 1,152 B of
        bf16 latent in, 16 x 256 x 2 B of k_nope / v written and read."""
        m = self.exp.model
        heads = m.num_heads / self._tp
        qk, v, nope = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim, m.qk_nope_head_dim
        ctx = np.maximum(reads - rows, 0.0) if isinstance(reads, np.ndarray) or isinstance(
            rows, np.ndarray) else max(reads - rows, 0.0)
        up_w = m.kv_lora_rank * heads * (nope + v) * self._wbytes[self._shapes["lin"]]
        nbytes = n_layers * (ctx * (self._mla + heads * (nope + v) * 2 * 2)
                             + rows * heads * (2 * qk + 2 * v) * 2 + up_w * (ctx > 0))
        flop_t = n_layers * (keys * heads * 2 * (qk + v) / self._dense_rate("prefill")
                             + ctx * 2 * m.kv_lora_rank * heads * (nope + v) / self._rate("bf16"))
        return self._roof(nbytes, flop_t, n_layers * KERNELS["attention"]) * (keys > 0)

    def _indexer(self, n_layers: int, pairs: Num, reads: Num) -> Num:
        """Lightning indexer (replicated on every TP rank) + top-k: keys read once per request,
        one fp8 score per head and query-key pair, logits written and read back by top-k."""
        m = self.exp.model
        nbytes = n_layers * (reads * m.indexer_bytes_per_token + pairs * 4 * (1 + TOPK_PASSES))
        flops = n_layers * pairs * 2 * m.index_n_heads * m.index_head_dim
        return self._roof(nbytes, flops / self._rate("fp8"),
                          n_layers * (KERNELS["indexer"] + KERNELS["topk"])) * (pairs > 0)

    def _clean_logits(self, n_layers: int, rows: Num, width: Num, valid: Num) -> Num:
        """DeepGEMM's -inf fill of `n_layers` indexers' logits (`engine.indexer_clean_logits`):
        `rows` query rows `width` fp32 columns wide, `valid` entries of them scored and not
        filled. Per layer the bytes at the HBM rate, but at least the busiest warp's rows at
        `calibration.clean_row_gbps` (CLEAN_WARPS_PER_SM), plus one kernel."""
        if not self._clean:
            return 0.0 * rows
        nbytes = 4.0 * np.maximum(rows * width - valid, 0.0)
        per_warp = np.ceil(np.ceil(rows / self._sms) / CLEAN_WARPS_PER_SM)
        serial = per_warp * 4.0 * width / (self.exp.calibration.clean_row_gbps * 1e9)
        t = np.maximum(nbytes / self._hbm, serial) + self._floor_us * 1e-6
        return n_layers * t * (rows > 0)

    def _decode_clean(self, n_layers: int, rows: Num, ctx: Num) -> Num:
        """The fill of `rows` decode query rows over `ctx` context keys in all (each row is
        max_model_len wide)."""
        return self._clean_logits(n_layers, rows, float(self._clean), ctx) if self._clean \
            else 0.0 * rows

    def _row_shards(self) -> int:
        """TP ranks that split a prefill's indexer rows (vLLM 0.33.0,
        `tp_prefill_row_sharding_supported` in v1/attention/backends/mla/indexer.py: CUDA, TP > 1,
        no DCP/PCP, and a cudagraph mode whose mixed batches are not FULL graphs); each rank then
        scores 1/tp of the prompt's queries and the top-k rows are all-gathered."""
        tp, e = self._tp, self.exp.engine
        return tp if tp > 1 and e.cudagraph_mode not in ("full",) and e.indexer_row_sharding else 1

    def _topk_gather(self, n_layers: int, rows: Num) -> Num:
        """All-gather of the row-sharded prefill top-k indices (int32) after each indexer."""
        tp, hw, c = self._tp, self.exp.hardware, self.exp.calibration
        if self._row_shards() == 1:
            return 0.0 * rows
        nbytes = rows * self.exp.index_topk * 4 * (tp - 1) / tp
        t = n_layers * (hw.allreduce_latency_us * 1e-6
                        + nbytes / (hw.group_gbps(tp) * 1e9 * c.comm_efficiency))
        return t * (rows > 0)

    def _allreduce(self, n_layers: int, tokens: Num, n_moe: int = 0) -> Num:
        """TP all-reduces: after attention and after the MLP of each of `n_layers` layers; with
        dp > 1 the `n_moe` MoE layers exchange tokens instead (`_moe_comm`)."""
        tp, hw, c = self._tp, self.exp.hardware, self.exp.calibration
        moe = self._moe_comm(n_moe, tokens) if n_moe else 0.0 * tokens
        if tp == 1:
            return moe
        count = 2 * n_layers - (n_moe if self._dp > 1 else 0)
        nbytes = tokens * self.exp.model.hidden_size * 2 * 2 * (tp - 1) / tp
        t = count * (hw.allreduce_latency_us * 1e-6
                     + nbytes / (hw.group_gbps(tp) * 1e9 * c.comm_efficiency))
        return t * (tokens > 0) + moe

    def _elementwise(self, n_layers: int, tokens: Num) -> Num:
        """Norms, residual adds, activation quantization and the MoE combine over the tokens'
        hidden states (memory-bound, replicated on every TP rank)."""
        nbytes = n_layers * tokens * ELEMENTWISE_HIDDEN_BYTES * self.exp.model.hidden_size
        return nbytes / self._hbm * (tokens > 0)

    def _linear_attention(self, n_layers: int, tokens: Num, requests: Num, ptokens: Num) -> Num:
        """`n_layers` linear-attention layers (heads split by TP) over `tokens` tokens: their
        projections, and the recurrent mixing, whose cost is per token whatever the context.
        Each of `requests` decoding requests reads its state once and writes one per verified
        token (a slot per speculative position); `ptokens` prompt tokens run chunkwise, the state
        read and written once per LINEAR_CHUNK tokens."""
        m, tp = self.exp.model, self._tp
        state = linear_state_bytes(m) / tp
        nbytes = n_layers * state * (requests * (1 + self.exp.k + 1) + 2 * ptokens / LINEAR_CHUNK)
        flops = n_layers * ((tokens - ptokens) * linear_flops(m, False)
                            + ptokens * linear_flops(m, True)) / tp
        mixing = self._roof(nbytes, flops / self._rate("bf16"), n_layers * KERNELS["linear_attn"])
        proj = n_layers * self._linears(tokens, self._shapes["linear_attn"], 1.0)
        floor = n_layers * KERNELS["linear_gemm"] * self._floor_us * 1e-6
        proj = np.maximum(proj, floor) if isinstance(proj, np.ndarray) else max(proj, floor)
        return (proj + mixing) * (tokens > 0)

    def _head(self, rows: Num) -> Num:
        """Vocab-parallel LM head (bf16) over `rows` positions, then sampling over the vocab."""
        m, tp = self.exp.model, self._tp
        v, h = m.vocab_size, m.hidden_size
        head = self._roof(v * h * 2 / tp, 2 * rows * v * h / tp / self._rate("bf16"), 1)
        return (head + self._sampling(rows)) * (rows > 0)

    def _sampling(self, rows: Num) -> Num:
        nbytes = rows * self.exp.model.vocab_size * 4 * 3
        return self._roof(nbytes, 0.0, SAMPLING_KERNELS) * (rows > 0)

    def _target(self, tokens: Num, keys: Num, pairs: Num, reads: Num, rows: Num,
                pkeys: Num = 0.0, preads: Num = 0.0, requests: Num = 0.0,
                ptokens: Num = 0.0, ppairs: Num = 0.0) -> Num:
        """The target over `tokens` tokens: `keys` are the decode queries' sparse-attention
        keys, `pkeys` / `preads` / `ppairs` the prompt chunks' keys, context read and causal
        pairs; `requests` decoding requests and `ptokens` prompt tokens for the linear-attention
        layers' states."""
        st = self._stack
        attention = self._attention(st.mla, keys, tokens - ptokens, self.exp.k + 1)
        if np.any(pkeys):
            attention = attention + self._prompt_attention(st.mla, pkeys, preads, ptokens, ppairs)
        total = (self._gemms(tokens, st.mla, st.dense, st.moe, st.indexer)
                 + attention
                 + self._indexer(st.indexer, pairs, reads)
                 + self._allreduce(st.layers, tokens, st.moe)
                 + self._elementwise(st.layers, tokens)
                 + self._head(rows))
        if st.linear:
            total = total + self._linear_attention(st.linear, tokens, requests, ptokens)
        return total

    def prefill_parts(self, tokens: int, start: int = 0) -> dict[str, float]:
        """Seconds per part of one target prefill chunk of `tokens` prompt tokens at positions
        [start, start + tokens), alone in its step: the breakdown `simulate` tables. A chunk
        that ends within top-k runs as dense MHA with its indexer skipped (`_short_steps`,
        `_unscored`) unless `engine.dense_short_prefill` is off."""
        m, tk, st = self.exp.model, self.exp.index_topk, self._stack
        end = start + tokens
        full = max(0, min(end, tk) - start)  # positions that see fewer than top-k keys
        keys = (sum(range(start + 1, start + full + 1)) if full else 0) + (tokens - full) * tk
        causal = (start + 1 + end) * tokens / 2
        short, scored = self._short_steps(keys, causal), 1.0 - self._unscored(keys, causal, 0)
        pairs = causal / self._row_shards() * scored
        linear = self._gemms(tokens, st.mla, st.dense, 0, st.indexer)
        moe = self._gemms(tokens, 0, 0, st.moe, 0)
        logits = self._roof(st.indexer * (end * m.indexer_bytes_per_token + pairs * 4),
                            st.indexer * pairs * 2 * m.index_n_heads * m.index_head_dim
                            / self._rate("fp8"), st.indexer * KERNELS["indexer"]) * scored
        topk = self._roof(st.indexer * pairs * 4 * TOPK_PASSES, 0.0,
                          st.indexer * KERNELS["topk"]) * scored
        label = ("dense MLA attention (MHA prefill)" if _dense(m) else
                 "dense MHA attention (prompt within top-k)" if short else "sparse MLA attention")
        parts = {"linear layers (attention projections, dense MLP, indexer)": linear,
                 "MoE experts (grouped GEMMs)": moe,
                 label: self._prompt_attention(st.mla, keys, end, tokens, causal),
                 "indexer logits (q·k over all earlier keys)": logits,
                 "top-k selection": topk,
                 "TP all-reduce + top-k all-gather": (
                     self._allreduce(st.layers, tokens)
                     + self._topk_gather(st.indexer, tokens) * scored),
                 "norms, residuals, quantization, MoE combine": self._elementwise(st.layers,
                                                                                   tokens),
                 "LM head + sampling (last chunk)": self._head(1)}
        if self._clean:
            parts["indexer logits -inf fill (clean_logits)"] = self._clean_logits(
                st.indexer, tokens / self._row_shards(), float(end), pairs) * scored
        if st.linear:
            parts["linear attention (projections, chunked state update)"] = \
                self._linear_attention(st.linear, tokens, 0.0, tokens)
        return parts

    # ---- one step ----------------------------------------------------------------------------
    def step(self, s: StepShape) -> dict[str, np.ndarray]:
        """Seconds per phase for the step(s) described by `s`."""
        m, k = self.exp.model, self.exp.k
        q = k + 1
        n_mtp = m.num_mtp_layers
        t = traits(self.policy)
        mtp_idx = _mtp_indexer(m)  # False for a dense family: its MTP layer has no indexer
        own_indexer = t.runs_indexer(0) and mtp_idx
        # target forward: verification of k+1 tokens per decoding request, plus prompt chunks
        v_tok = s.num_decode * q
        verify = self._target(v_tok, q * s.decode_keys, q * s.decode_ctx, s.decode_ctx, v_tok,
                              requests=s.num_decode)
        shards = self._row_shards()
        if np.any(s.prefill_tokens):  # exactly 0 at steps without prefill (x + 0 == x)
            # so over many steps only those with prompt chunks are priced again (each step's
            # arithmetic is its own: the same numbers, a fraction of the work)
            at = np.flatnonzero(s.prefill_tokens) if np.ndim(s.prefill_tokens) == 1 else None
            x = (lambda v: v[at] if np.ndim(v) == 1 else v) if at is not None else (lambda v: v)
            vt, ptok, ppairs = x(v_tok), x(s.prefill_tokens), x(s.prefill_pairs)
            # prompts alone in a step, all within top-k: the target's indexers skip them
            scored = 1.0 - self._unscored(x(s.prefill_keys), ppairs, x(s.num_decode))
            both = self._target(vt + ptok, q * x(s.decode_keys),
                                q * x(s.decode_ctx) + scored * ppairs / shards,
                                x(s.decode_ctx) + scored * x(s.prefill_reads),
                                vt + x(s.prefill_done), x(s.prefill_keys), x(s.prefill_reads),
                                x(s.num_decode), ptok, ppairs)
            prefill = both - x(verify) + scored * (
                self._topk_gather(self._stack.indexer, ptok)
                + self._clean_logits(self._stack.indexer, ptok / shards, x(s.prefill_reads),
                                     ppairs / shards))
            if at is not None:
                full = np.zeros(np.shape(s.prefill_tokens))
                full[at] = prefill
                prefill = full
        else:
            prefill = 0.0 * verify
        verify = verify + self._decode_clean(self._stack.indexer, v_tok, q * s.decode_ctx)
        if k == 0:  # plain decoding: no MTP layer runs, only the target and its sampling
            return self._phases(s, prefill, verify, 0.0 * verify, 0.0 * verify, 0.0 * verify)
        # draft step 0: the MTP layer over the newly verified tokens and the prompt chunks
        d_tok = v_tok + s.prefill_tokens
        draft_prefill = (
            self._gemms(d_tok, n_mtp, 0, n_mtp, n_mtp if own_indexer else 0,
                        n_mtp * self._params()["eh_proj"])
            + self._attention(n_mtp, q * s.decode_keys, v_tok, q)
            + (self._prompt_attention(n_mtp, s.prefill_keys, s.prefill_reads, s.prefill_tokens,
                                      s.prefill_pairs) if np.any(s.prefill_keys) else 0.0)
            + (self._indexer(n_mtp, q * s.decode_ctx + s.prefill_pairs / shards,
                             s.decode_ctx + s.prefill_reads)
               + self._topk_gather(n_mtp, s.prefill_tokens)
               + self._decode_clean(n_mtp, v_tok, q * s.decode_ctx)
               + self._clean_logits(n_mtp, s.prefill_tokens / shards, s.prefill_reads,
                                    s.prefill_pairs / shards) if own_indexer else 0.0)
            + self._allreduce(n_mtp, d_tok, n_mtp)
            + self._head(s.num_draft))
        if t.reuses_own_row and mtp_idx and k > 1 and np.any(s.num_draft):
            # compact_topk_indices: gather one top-k row per request, for draft steps 1.. to
            # reuse; Model Runner V2 skips it when there are none (vLLM 0.33.0,
            # v1/worker/gpu/spec_decode/mtp/speculator.py `on_prefill_end`: only if
            # num_speculative_steps > 1), so at k = 1 `share` runs fresh's program
            draft_prefill = draft_prefill + self._roof(s.num_draft * self.exp.index_topk * 8,
                                                       0.0, n_mtp) * (s.num_draft > 0)
        # draft steps 1..k-1, one token per drafting request
        steps = k - 1
        b = s.num_draft
        if steps and np.any(b):  # every term below is 0 at steps with no drafting request
            rest = steps * (self._gemms(b, n_mtp, 0, n_mtp, 0, n_mtp * self._params()["eh_proj"])
                            + self._attention(n_mtp, s.draft_keys, b)
                            + self._allreduce(n_mtp, b, n_mtp) + self._head(b))
            if t.runs_indexer(1):
                indexer = (steps * (self._gemms(b, 0, 0, 0, n_mtp)
                                    + self._indexer(n_mtp, s.draft_ctx, s.draft_ctx)
                                    + self._decode_clean(n_mtp, b, s.draft_ctx))
                           if mtp_idx else 0.0 * rest)
            else:
                indexer = 0.0 * rest
                if t.appends_drafted:  # write the drafted positions into the row
                    rest = rest + steps * self._roof(0.0, 0.0, n_mtp) * (b > 0)
        else:
            rest = indexer = 0.0 * verify
        return self._phases(s, prefill, verify, draft_prefill, indexer, rest)

    def _host(self, s: StepShape, gpu_phases: tuple) -> Num | None:
        """Per-request host work of the step (`calibration.host_us_per_request` x the requests
        it runs, a decoding one counted once per token it schedules, 1 + k: the scheduler
        carries its draft tokens and the output update appends and checks every token it
        accepts; benchmarks/vllm_host_cost.py --mtp 1 times vLLM's at ~2.2x per request with
        one draft), plus prompt chunks that complete, as `_host_visible` shows it: vLLM's
        engine core schedules, updates each request from the step's output and prepares the
        next inputs on one CPU thread (v1/engine/core.py `EngineCore.step`: `schedule`,
        `execute_model`, `update_from_output`); with `async_scheduling` (`step_with_batch_queue`)
        that work overlaps the GPU's. None when the rate is 0."""
        rate = self.exp.calibration.host_us_per_request
        if not rate:
            return None
        host = rate * 1e-6 * (s.num_decode * (self.exp.k + 1) + s.prefill_done)
        gpu = sum(gpu_phases) if self.exp.engine.async_scheduling else 0.0
        return _host_visible(host, gpu, self.exp.engine.async_scheduling)

    def _eager_share(self, s: StepShape, v_tok: Num) -> Num:
        """Share of the step's layer forwards launched outside CUDA graphs (what
        `eager_overhead_ms` is paid on): the target's one forward of `num_layers` layers by
        EAGER_SHARE, and at k >= 1 the drafter's k forwards of `num_mtp_layers` (draft step 0 over
        the step's tokens, steps 1..k-1 over one token per drafting request) by
        DRAFTER_EAGER_SHARE; any forward past the capture ceiling runs without graphs (share 1).
        The overhead is taken as proportional to the layer forwards launched (assumed)."""
        mode = self.exp.engine.cudagraph_mode
        with_prefill, decode_only = EAGER_SHARE[mode]
        target = (np.where(s.prefill_tokens > 0, with_prefill, decode_only)
                  if isinstance(s.prefill_tokens, np.ndarray)
                  else with_prefill if s.prefill_tokens else decode_only)
        tokens = v_tok + s.prefill_tokens

        def past_ceiling(share: Num, n: Num) -> Num:
            if not self._graph_max:
                return share
            over = n > self._graph_max
            return np.where(over, 1.0, share) if isinstance(over, np.ndarray) else \
                (1.0 if over else share)

        target = past_ceiling(target, tokens)
        k = self.exp.k
        if not k:
            return target
        layers, mtp = self.exp.model.num_layers, self.exp.model.num_mtp_layers
        drafter = DRAFTER_EAGER_SHARE[mode]
        first = past_ceiling(drafter, tokens)
        rest = past_ceiling(drafter, s.num_draft) * (k - 1)
        return (layers * target + mtp * (first + rest)) / (layers + k * mtp)

    def _phases(self, s: StepShape, prefill: Num, verify: Num, draft_prefill: Num, indexer: Num,
                rest: Num) -> dict[str, np.ndarray]:
        """The step's phases, with sampling (rejection sampling, or plain at k = 0) and the
        per-step overhead added."""
        k = self.exp.k
        v_tok = s.num_decode * (k + 1)
        reject = self._sampling(v_tok) + self._sampling(s.prefill_done)
        if self._topp is not None:  # top-p masking: the sampler's rows, the draft rows' targets
            main, drafts = self._topp
            reject = reject + (s.num_decode + s.prefill_done) * main + s.num_decode * k * drafts
        c = self.exp.calibration
        eager = self._eager_share(s, v_tok)
        overhead = (c.overhead_ms + eager * c.eager_overhead_ms) * 1e-3
        host = self._host(s, (prefill, verify, draft_prefill, indexer, rest, reject))
        if host is not None:
            overhead = overhead + host
        out = dict(zip(PHASES, (prefill, verify, draft_prefill, indexer, rest, reject, overhead),
                       strict=True))
        sizes = [v.shape for v in out.values() if isinstance(v, np.ndarray) and v.ndim]
        if not sizes:
            return {name: np.float64(v) for name, v in out.items()}
        return {name: np.broadcast_to(np.asarray(v, float), sizes[0]) for name, v in out.items()}


def sparse_mla_rate(exp: Experiment, bf16_rate: float) -> float:
    """FLOP/s of the sparse MLA kernels: the BF16 rate the efficiency gives, at most FlashMLA's
    published best on Hopper for the cache's kernel (FLASHMLA_SM90_SHARE x the BF16 peak)."""
    if exp.hardware.architecture != "hopper":
        return bf16_rate
    share = FLASHMLA_SM90_SHARE["fp8" if kv_cache_dtype(exp) == "fp8" else "bfloat16"]
    return min(bf16_rate, exp.hardware.bf16_tflops * 1e12 * share)


def full_width_rows(exp: Experiment, prefill: bool) -> bool:
    """Whether FlashMLA's Hopper kernel for decode (`prefill` False) or prompt rows multiplies
    every top-k slot (the note under FLASHMLA_SM90_SHARE): always the FP8 decode kernel, which
    runs an fp8 cache's decode rows and, below 32 heads per rank, its prompt rows too (vLLM
    0.33.0 `fp8_use_mixed_batch`, v1/attention/backends/mla/flashmla_sparse.py); the BF16 kernel
    (every row of a bf16 cache, an fp8 cache's prompt rows at >= 32 heads) unless
    `engine.sparse_topk_length`. Other GPUs: valid keys only (on Blackwell vLLM 0.33.0 prefers
    FlashInfer's sparse MLA for an fp8 cache, platforms/cuda.py; that kernel was not read)."""
    if exp.hardware.architecture != "hopper":
        return False
    if kv_cache_dtype(exp) == "fp8" and (not prefill or exp.model.num_heads / exp.engine.tp < 32):
        return True
    return not exp.engine.sparse_topk_length


def cudagraph_max_tokens(exp: Experiment) -> int:
    """Tokens of the largest step vLLM 0.33.0 runs in a CUDA graph by default (0: no graphs):
    min(max_num_seqs x (1 + k) x 2, 512; 1024 on Blackwell, device capability family 100),
    capped at max_num_batched_tokens (`VllmConfig._set_cudagraph_sizes`). A decode batch of B
    requests fits when B x (1 + k) does: MTP's verify tokens count against the ceiling."""
    e = exp.engine
    if e.cudagraph_mode == "none":
        return 0
    blackwell = exp.hardware.architecture == "blackwell"
    ceiling = GRAPH_MAX_TOKENS_BLACKWELL if blackwell else GRAPH_MAX_TOKENS
    return min(e.max_num_seqs * (1 + exp.k) * 2, ceiling, e.max_num_batched_tokens)


def topp_seconds_per_row(exp: Experiment) -> tuple[float, float] | None:
    """Seconds of top-p masking per sampled row (the sampler's rows, the rejection sampler's
    draft rows), or None when the requests carry no top-p (TOPP_S_PER_LOGIT)."""
    if exp.workload.top_p >= 1.0:
        return None
    scale = exp.model.vocab_size * H100_HBM_TBPS / exp.hardware.hbm_tbps
    if exp.engine.sampler == "sort":
        return TOPP_S_PER_LOGIT["sort"] * scale, TOPP_S_PER_LOGIT["sort"] * scale
    return TOPP_S_PER_LOGIT["flashinfer"] * scale, TOPP_S_PER_LOGIT["triton"] * scale


def _host_visible(host: Num, gpu: Num, overlapped: bool) -> Num:
    """Host time a step adds: all of it run serially; under async scheduling only what the
    GPU's time for the step does not cover."""
    if not overlapped:
        return host
    if isinstance(host, np.ndarray) or isinstance(gpu, np.ndarray):
        return np.maximum(host - gpu, 0.0)
    return max(host - gpu, 0.0)
