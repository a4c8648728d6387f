"""Layer kinds: what one decoder layer is made of, and what each part costs in parameters, GEMM
shapes, cache bytes and FLOPs. A family (mtpsim.models.families) lists its layers as `Layer`s;
the roofline (mtpsim.models.roofline) prices each kind's bytes and FLOPs on a GPU, and a `Stack`
counts the kinds so the roofline multiplies one layer's cost by how many there are.

- MLA (multi-head latent attention): low-rank query and key-value projections, a 656-byte fp8
  latent per token in the KV cache; its sparse attention reads min(context, top-k) latent entries
  per query, so a decode step grows with context only up to the top-k.
- DSA indexer (DeepSeek Sparse Attention's lightning indexer): scores every earlier key (132
  bytes per token in its key cache) and picks the top-k; it grows with context. An MLA layer
  without its own indexer reuses the previous layer's top-k (GLM-5.2's "shared" layers).
- Dense FFN (SwiGLU) or MoE FFN (routed and shared SwiGLU experts and a router).
- Linear attention (Gated DeltaNet, Kimi Delta Attention): q/k/v projections, low-rank forget and
  output gates, a per-head write strength, and a recurrent state of heads x head_dim x head_dim
  fp32 per request instead of a per-token cache: its cost per token does not grow with context.
  Its prefill runs chunkwise (chunks of `LINEAR_CHUNK` tokens, the state written once per chunk).
  The FLOPs below are the delta rule's (assumed: ~7 head_dim^2 per head and token for the state
  update and read-out, plus 4 x chunk x head_dim for a chunk's intra-chunk attention).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mtpsim.dataclass import dataclass

if TYPE_CHECKING:
    from mtpsim.spec import ModelSpec

MLA, LINEAR = "mla", "linear"  # token mixers
DENSE, MOE = "dense", "moe"  # feed-forward kinds
LINEAR_CHUNK = 64  # tokens per chunk of the chunkwise linear-attention prefill (FLA's kernels)
STATE_BYTES = 4  # the recurrent state is fp32


@dataclass(frozen=True, slots=True)
class Layer:
    """One decoder layer: its token mixer, whether it runs its own DSA indexer, its FFN."""

    mixer: str  # MLA | LINEAR
    indexer: bool  # an MLA layer's own lightning indexer (False: it reuses the previous top-k)
    ffn: str  # DENSE | MOE


@dataclass(frozen=True, slots=True)
class Stack:
    """How many layers of each kind a layer list holds: what the roofline multiplies by."""

    layers: int
    mla: int
    linear: int
    indexer: int
    dense: int
    moe: int

    @classmethod
    def of(cls, layers: Sequence[Layer]) -> Stack:
        return cls(len(layers), sum(x.mixer == MLA for x in layers),
                   sum(x.mixer == LINEAR for x in layers),
                   sum(x.mixer == MLA and x.indexer for x in layers),
                   sum(x.ffn == DENSE for x in layers), sum(x.ffn == MOE for x in layers))


def gemm_shapes(m: ModelSpec, tp: int, lin: str) -> dict[str, tuple]:
    """(K, N, kind) of each GEMM of one layer's parts on one GPU under tensor parallelism `tp`:
    MLA's down projections, the indexer and the linear-attention gates' down projections are
    replicated, the head-sharded projections and the (experts') MLPs are split `tp` ways. Their
    parameters add up to `layer_params`."""
    h, nh = m.hidden_size, m.num_heads
    mi, inter = m.moe_intermediate_size, m.intermediate_size
    lh, ld = m.linear_num_heads, m.linear_head_dim
    return {
        "lin": lin,
        "attn": ((h, m.q_lora_rank, lin), (h, m.kv_lora_rank + m.qk_rope_head_dim, lin),
                 (m.q_lora_rank, nh * (m.qk_nope_head_dim + m.qk_rope_head_dim) / tp, lin),
                 (m.kv_lora_rank, nh * (m.qk_nope_head_dim + m.v_head_dim) / tp, lin),
                 (nh * m.v_head_dim / tp, h, lin)),
        "indexer": ((m.q_lora_rank, m.index_n_heads * m.index_head_dim, lin),
                    (h, m.index_head_dim, lin), (h, m.index_n_heads, lin)),
        "dense": ((h, 2 * inter / tp, lin), (inter / tp, h, lin)),
        "expert": ((h, 2 * mi / tp, "expert"), (mi / tp, h, "expert")),
        # q, k, v and the write strength; the gates' rank-head_dim downs and ups; the output
        "linear_attn": ((h, (3 * lh * ld + lh) / tp, lin), (h, 2 * ld, lin),
                        (ld, 2 * lh * ld / tp, lin), (lh * ld / tp, h, lin)),
    }


@functools.lru_cache(maxsize=16)
def layer_params(m: ModelSpec) -> dict[str, float]:
    """Parameter counts of one layer's weight groups (the whole model for `embed`)."""
    h, nh = m.hidden_size, m.num_heads
    lh, ld = m.linear_num_heads, m.linear_head_dim
    return {
        "attn_rep": h * m.q_lora_rank + h * (m.kv_lora_rank + m.qk_rope_head_dim),
        "attn_sh": (m.q_lora_rank * nh * (m.qk_nope_head_dim + m.qk_rope_head_dim)
                    + m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim)
                    + nh * m.v_head_dim * h),
        "indexer": (m.q_lora_rank * m.index_n_heads * m.index_head_dim
                    + h * m.index_head_dim + h * m.index_n_heads),
        "dense": 3 * h * m.intermediate_size,
        "expert": 3 * h * m.moe_intermediate_size,
        "router": h * m.num_routed_experts,
        "embed": m.vocab_size * h,
        "eh_proj": 2 * h * h,
        # sharded by heads: q/k/v, write strength, gate ups, output, short convolutions
        "linear_sh": (3 * h * lh * ld + h * lh + 2 * ld * lh * ld + lh * ld * h
                      + 3 * lh * ld * m.linear_conv_kernel),
        "linear_rep": 2 * h * ld,  # the gates' down projections
    }


def linear_state_bytes(m: ModelSpec) -> float:
    """One request's state in one linear-attention layer (all heads): the fp32 recurrent state
    and the short convolutions' last kernel - 1 inputs of q, k and v (bf16)."""
    lh, ld = m.linear_num_heads, m.linear_head_dim
    return lh * ld * ld * STATE_BYTES + (m.linear_conv_kernel - 1) * 3 * lh * ld * 2


def linear_flops(m: ModelSpec, chunked: bool) -> float:
    """FLOPs per token of one linear-attention layer's mixing (all heads), outside its GEMMs:
    the recurrent update and read-out, and in a chunked prefill the intra-chunk attention."""
    lh, ld = m.linear_num_heads, m.linear_head_dim
    return lh * (7 * ld * ld + (4 * LINEAR_CHUNK * ld if chunked else 0))
