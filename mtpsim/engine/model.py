"""A small DeepSeek-V3.2-style model: byte vocabulary, RoPE, RMSNorm, SwiGLU, DSA sparse attention
(lightning indexer + top-k) and one DeepSeek-V3 MTP module with its own indexer.

One inference entry per module (`Transformer.forward` for the target, `Transformer.draft` for the
MTP layer) over static caches allocated by `setup_caches`; requests live in cache slots, so a
batch is `tokens [B, T]`, `input_pos [B, T]` (per-request positions) and `slots [B]`.
The MTP layer's top-k source is switched by the vLLM-named methods of `TopkSharingModel`
(`set_skip_topk`, `compact_topk_indices`, ...), which the reuse policies call from their hooks.
`forward_train` is the cache-free training path (dense, indexer distillation, or sparse).
Its layers are a dsa_mla family's (mtpsim.models.families): `ModelArgs.layers` lists them and
`Block` builds the kinds this engine implements (sparse attention with its own indexer standing
for MLA + DSA, a dense SwiGLU FFN); a layer of another kind (linear attention) is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mtpsim.dataclass import dataclass
from mtpsim.engine.indexer import (
    Indexer,
    apply_rope,
    canonical,
    index_scores,
    overlap,
    rope_cache,
    select_topk,
    topk_mask,
)
from mtpsim.models.families.dsa_mla import dsa_mla_layers
from mtpsim.models.families.layers import DENSE, MLA, Layer


@dataclass(frozen=True)
class ModelArgs:
    vocab_size: int = 256
    n_layer: int = 4
    dim: int = 256
    n_head: int = 4
    intermediate_size: int = 704
    n_index_head: int = 4
    index_head_dim: int = 32
    index_topk: int = 64  # default; every inference call may pass its own
    rope_base: float = 10000.0
    max_seq_len: int = 8192  # rope table size
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_head

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)

    def layers(self) -> tuple[Layer, ...]:
        """The decoder layers: every one attends sparsely with its own indexer, FFN dense."""
        return dsa_mla_layers(self.n_layer, self.n_layer, self.n_layer)


# The one layer kind this engine builds (its attention is multi-head, standing for MLA + DSA as
# the `reference` model preset maps it; mtpsim/spec/presets/models/reference.toml).
ENGINE_LAYER = Layer(MLA, True, DENSE)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LayerCache(nn.Module):
    """KV cache and indexer-key cache of one layer, [max_batch, max_seq, ...], written at input_pos."""

    def __init__(self, max_batch: int, max_seq: int, args: ModelArgs, dtype: torch.dtype) -> None:
        super().__init__()
        kv = (max_batch, max_seq, args.n_head, args.head_dim)
        self.register_buffer("k", torch.zeros(kv, dtype=dtype), persistent=False)
        self.register_buffer("v", torch.zeros(kv, dtype=dtype), persistent=False)
        ik = (max_batch, max_seq, args.index_head_dim)
        self.register_buffer("ik", torch.zeros(ik, dtype=dtype), persistent=False)

    def update(self, slots: Tensor, input_pos: Tensor, k: Tensor, v: Tensor) -> None:
        # slots [B], input_pos [B, T], k/v [B, T, H, D]
        rows = slots[:, None]
        self.k[rows, input_pos] = k
        self.v[rows, input_pos] = v

    def update_index_keys(self, slots: Tensor, input_pos: Tensor, ik: Tensor) -> None:
        self.ik[slots[:, None], input_pos] = ik  # ik [B, T, DI]


@dataclass
class IndexerWork:
    """Rows each part of one layer's indexer processed (the indexer-work test reads these)."""

    projected: int = 0  # query/key/weight projections
    keys_written: int = 0  # indexer keys stored in the cache
    scored: int = 0  # query rows scored against the cached keys and top-k selected


# (cos, sin) for attention heads, then (cos, sin) for indexer heads, gathered at the positions.
Rope = tuple[Tensor, Tensor, Tensor, Tensor]
# A selection chooser gets a thunk computing the fresh top-k [B, T, K] and returns the rows to use.
Chooser = Callable[[Callable[[], Tensor]], Tensor]


class Attention(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.n_head, self.head_dim = args.n_head, args.head_dim
        self.wqkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.indexer = Indexer(args.dim, args.n_index_head, args.index_head_dim)
        self.cache: LayerCache | None = None
        self.work = IndexerWork()
        self.timer = PhaseTimer()  # the model's, set by Transformer.use_timer
        # True: project and write indexer keys even where the chooser reuses rows (the engine
        # before issue #11; kept so benchmarks can time both side by side)
        self.eager_index_keys = False
        # measurement hook: called with each fresh selection's scores [B, T, S] and input_pos [B, T]
        self.on_scores: Callable[[Tensor, Tensor], None] | None = None

    def _qkv(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        B, T, _ = x.shape
        q, k, v = self.wqkv(x).view(B, T, 3, self.n_head, self.head_dim).unbind(2)
        return apply_rope(q, cos, sin), apply_rope(k, cos, sin), v  # each [B, T, H, D]

    def forward(self, x: Tensor, rope: Rope, input_pos: Tensor, slots: Tensor,
                topk: int, choose: Chooser | None = None) -> tuple[Tensor, Tensor]:
        """x [B, T, dim] -> (out [B, T, dim], selection [B, T, topk] best first, -1 padded)."""
        assert self.cache is not None, "call setup_caches() first"
        B, T, _ = x.shape
        q, k, v = self._qkv(x, rope[0], rope[1])
        cache, work = self.cache, self.work
        cache.update(slots, input_pos, k, v)
        n_keys = int(input_pos.max()) + 1  # keys beyond the furthest query are never selected

        proj: list[Tensor] = []

        def index_keys() -> list[Tensor]:
            """Indexer projections and key writes of these rows, once."""
            if not proj:
                qi, ki, wi = self.indexer.project(x, rope[2], rope[3])
                cache.update_index_keys(slots, input_pos, ki)
                proj.extend((qi, wi))
                work.projected, work.keys_written = work.projected + B * T, work.keys_written + B * T
            return proj

        def fresh() -> Tensor:
            """The whole indexer: projections, key writes, scoring, top-k. A chooser that reuses
            rows never calls it (as vLLM skips it), so those rows' indexer keys stay unwritten
            until the next draft prefill rewrites them; only fresh() itself reads the keys."""
            qi, wi = index_keys()
            work.scored += B * T
            scores = index_scores(qi, cache.ik[slots, :n_keys], wi, input_pos)
            if self.on_scores is not None:
                self.on_scores(scores, input_pos)
            return select_topk(scores, topk)

        if self.eager_index_keys:
            index_keys()
        idx = fresh() if choose is None else choose(fresh)
        timer = self.timer
        t0 = timer.now(x.device) if timer.attention_on else 0.0
        sel = canonical(idx)
        valid, safe = sel >= 0, sel.clamp(min=0)
        rows = slots[:, None, None]
        ks, vs = self.cache.k[rows, safe], self.cache.v[rows, safe]  # [B, T, K, H, D]
        att = torch.einsum("bthd,btkhd->bthk", q, ks) * self.head_dim**-0.5
        att = att.masked_fill(~valid[:, :, None, :], float("-inf")).softmax(-1)
        out = torch.einsum("bthk,btkhd->bthd", att, vs).reshape(B, T, -1)
        if timer.attention_on:
            timer.attention_s += timer.now(x.device) - t0
        return self.wo(out), idx

    def forward_train(self, x: Tensor, rope: Rope, mode: str,
                      topk: int) -> tuple[Tensor, Tensor | None]:
        """Cache-free path. mode: dense | distill (adds the indexer KL) | sparse."""
        B, T, _ = x.shape
        q, k, v = (t.transpose(1, 2) for t in self._qkv(x, rope[0], rope[1]))  # [B, H, T, D]
        pos = torch.arange(T, device=x.device).expand(B, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        if mode == "dense":
            out, kl = F.scaled_dot_product_attention(q, k, v, is_causal=True), None
        elif mode == "distill":
            att = (q @ k.transpose(-1, -2)) * self.head_dim**-0.5
            att = att.masked_fill(~causal, float("-inf")).softmax(-1)  # [B, H, T, T]
            out = att @ v
            target = att.mean(1).detach()  # [B, T, T], the attention distribution summed over heads
            qi, ki, wi = self.indexer.project(x.detach(), rope[2], rope[3])
            logq = index_scores(qi, ki, wi, pos).log_softmax(-1).masked_fill(~causal, 0.0)
            kl = (target * (target.clamp_min(1e-30).log() - logq)).sum(-1).mean()
        elif mode == "sparse":
            with torch.no_grad():
                qi, ki, wi = self.indexer.project(x, rope[2], rope[3])
                mask = topk_mask(select_topk(index_scores(qi, ki, wi, pos), topk), T)
            out, kl = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None]), None
        else:
            raise ValueError(f"unknown attention mode {mode!r}")
        return self.wo(out.transpose(1, 2).reshape(B, T, -1)), kl


class Block(nn.Module):
    def __init__(self, args: ModelArgs, layer: Layer = ENGINE_LAYER) -> None:
        super().__init__()
        if layer != ENGINE_LAYER:
            raise ValueError(f"the reference engine builds {ENGINE_LAYER} blocks only, not {layer} "
                             "(a linear-attention block would need its recurrent state rolled "
                             "back for rejected drafts)")
        self.attention_norm = RMSNorm(args.dim, args.norm_eps)
        self.attention = Attention(args)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)
        self.feed_forward = FeedForward(args.dim, args.intermediate_size)

    def forward(self, x: Tensor, rope: Rope, input_pos: Tensor, slots: Tensor,
                topk: int, choose: Chooser | None = None) -> tuple[Tensor, Tensor]:
        a, idx = self.attention(self.attention_norm(x), rope, input_pos, slots, topk, choose)
        x = x + a
        return x + self.feed_forward(self.ffn_norm(x)), idx

    def forward_train(self, x: Tensor, rope: Rope, mode: str,
                      topk: int) -> tuple[Tensor, Tensor | None]:
        a, kl = self.attention.forward_train(self.attention_norm(x), rope, mode, topk)
        x = x + a
        return x + self.feed_forward(self.ffn_norm(x)), kl


# The clock of every phase timing: wall time, or the calling thread's CPU time when a run asks
# for timings that other processes on a shared machine do not inflate (`reference.clock`).
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


class PhaseTimer:
    """One engine's phase clock, shared by its model's attention layers and MTP module
    (`Transformer.use_timer`). `attention_s` sums the seconds spent in the top-k-wide sparse
    attention (sort, gather, attend) of every layer while `attention_on`: its cost is rows x
    top-k, and the trace records it per phase so the calibration can price top-k apart from the
    per-row work (mtpsim.calibration.fit)."""

    def __init__(self, clock: str = "wall") -> None:
        self.clock = CLOCKS[clock]
        self.attention_on, self.attention_s = False, 0.0

    def now(self, device: torch.device) -> float:
        """The clock after the device finished its queued work (phase timings on CUDA)."""
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return self.clock()


class MTP(nn.Module):
    """DeepSeek-V3 MTP module: h' = Block(eh_proj([enorm(emb(next_token)); hnorm(h)])).

    Its top-k source: fresh (own indexer), the compacted step-0 rows (`skip_topk`, optionally
    with the drafted positions appended: `append_recent`), or the target's last-layer rows
    (`use_target_topk`). With `shadow` on, every step that does not run the indexer also
    computes the fresh selection off the clock and records the overlap of the used rows."""

    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.enorm = RMSNorm(args.dim, args.norm_eps)
        self.hnorm = RMSNorm(args.dim, args.norm_eps)
        self.eh_proj = nn.Linear(2 * args.dim, args.dim, bias=False)
        self.block = Block(args)
        self.skip_topk = self.append_recent = self.use_target_topk = self.shadow = False
        self.rows: Tensor | None = None  # [rows, K] step-0 selections, compacted to [:num_reqs]
        self.rows_pos: Tensor | None = None  # [rows] query position of each row
        self.timer = PhaseTimer()  # the model's, set by Transformer.use_timer
        self.reset_stats()

    def reset_stats(self) -> None:
        self.indexer_calls, self.indexer_s, self.shadow_s = 0, 0.0, 0.0
        self.last_overlap: Tensor | None = None  # [B * T] overlap of the last call's rows

    def compact(self, last_token_indices: Tensor) -> None:
        assert self.rows is not None and self.rows_pos is not None
        n = last_token_indices.shape[0]
        self.rows[:n] = self.rows[last_token_indices]
        self.rows_pos[:n] = self.rows_pos[last_token_indices]

    def _choose(self, fresh: Callable[[], Tensor], input_pos: Tensor,
                target_rows: Tensor | None) -> Tensor:
        B, T = input_pos.shape
        dev = input_pos.device
        if self.skip_topk:
            assert self.rows is not None and self.rows_pos is not None and T == 1
            used = self.rows[:B]
            if self.append_recent:
                used = with_recent(used, self.rows_pos[:B], input_pos[:, 0])
            used = used[:, None, :]
        elif self.use_target_topk:
            assert target_rows is not None
            used = target_rows
        else:
            t0 = self.timer.now(dev)
            used = fresh()
            self.indexer_s += self.timer.now(dev) - t0
            self.indexer_calls += 1
        if not self.skip_topk:
            self.rows, self.rows_pos = used.reshape(B * T, -1).clone(), input_pos.reshape(-1).clone()
        if self.shadow:
            t0 = self.timer.now(dev)
            if self.skip_topk or self.use_target_topk:
                self.last_overlap = overlap(used.reshape(B * T, -1), fresh().reshape(B * T, -1))
            else:
                self.last_overlap = torch.ones(B * T, device=dev)
            self.shadow_s += self.timer.now(dev) - t0
        return used

    def forward(self, emb: Tensor, hidden: Tensor, rope: Rope, input_pos: Tensor,
                slots: Tensor, topk: int, target_rows: Tensor | None) -> Tensor:
        x = self.eh_proj(torch.cat([self.enorm(emb), self.hnorm(hidden)], dim=-1))
        x, _ = self.block(x, rope, input_pos, slots, topk,
                          lambda fresh: self._choose(fresh, input_pos, target_rows))
        return x

    def forward_train(self, emb: Tensor, hidden: Tensor, rope: Rope, mode: str,
                      topk: int) -> tuple[Tensor, Tensor | None]:
        x = self.eh_proj(torch.cat([self.enorm(emb), self.hnorm(hidden)], dim=-1))
        return self.block.forward_train(x, rope, mode, topk)


def with_recent(rows: Tensor, row_pos: Tensor, q_pos: Tensor) -> Tensor:
    """share_recent: rows [B, K] (best first) for positions row_pos [B]; the query at q_pos [B]
    also gets row_pos+1..q_pos, replacing the lowest-ranked (or padding) entries."""
    K = rows.shape[1]
    j = torch.arange(K, device=rows.device)[None, :]
    n = (q_pos - row_pos)[:, None]
    return torch.where(j >= K - n, q_pos[:, None] - (K - 1 - j), rows)


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.args = args
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(Block(args, layer) for layer in args.layers())
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        self.mtp = MTP(args)
        cos, sin = rope_cache(args.max_seq_len, args.head_dim, args.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        ci, si = rope_cache(args.max_seq_len, args.index_head_dim, args.rope_base)
        self.register_buffer("icos", ci, persistent=False)
        self.register_buffer("isin", si, persistent=False)
        self.target_topk: Tensor | None = None
        self.apply(_init_weights)
        self.use_timer(PhaseTimer())

    def use_timer(self, timer: PhaseTimer) -> None:
        """Time every phase of this model on `timer` (its engine's)."""
        self.timer = timer
        for m in self.modules():
            if isinstance(m, Attention | MTP):
                m.timer = timer

    def setup_caches(self, max_batch: int, max_seq: int, max_topk: int) -> None:
        """Allocate the static caches: per-layer KV + indexer keys, and the target's last-layer
        top-k rows per position (read by `target_share`)."""
        if max_seq > self.args.max_seq_len:
            raise ValueError(f"max_seq {max_seq} exceeds the rope table ({self.args.max_seq_len})")
        dtype, dev = self.output.weight.dtype, self.output.weight.device
        for block in [*self.layers, self.mtp.block]:
            block.attention.cache = LayerCache(max_batch, max_seq, self.args, dtype).to(dev)
        self.target_topk = torch.full((max_batch, max_seq, max_topk), -1, dtype=torch.long,
                                      device=dev)

    def _rope(self, input_pos: Tensor) -> Rope:
        return (self.cos[input_pos], self.sin[input_pos], self.icos[input_pos], self.isin[input_pos])

    def forward(self, tokens: Tensor, input_pos: Tensor, slots: Tensor,
                topk: int) -> tuple[Tensor, Tensor]:
        """Target: tokens/input_pos [B, T], slots [B] -> (logits [B, T, V], hidden [B, T, dim])."""
        assert self.target_topk is not None, "call setup_caches() first"
        x, rope = self.tok_embeddings(tokens), self._rope(input_pos)
        idx = None
        for layer in self.layers:
            x, idx = layer(x, rope, input_pos, slots, topk)
        self.target_topk[slots[:, None], input_pos, :topk] = idx
        return self.output(self.norm(x)), x

    def draft(self, tokens: Tensor, hidden: Tensor, input_pos: Tensor, slots: Tensor,
              topk: int) -> tuple[Tensor, Tensor]:
        """MTP layer at rows input_pos: tokens are the *next* tokens, hidden the previous layer's
        hidden at the same rows -> (logits [B, T, V] for the token after next, hidden [B, T, dim])."""
        assert self.target_topk is not None, "call setup_caches() first"
        target_rows = self.target_topk[slots[:, None], input_pos, :topk]
        h = self.mtp(self.tok_embeddings(tokens), hidden, self._rope(input_pos), input_pos, slots,
                     topk, target_rows)
        return self.output(self.norm(h)), h

    # --- TopkSharingModel (mtpsim.policies): called by the reuse policies' hooks ---
    def set_skip_topk(self, skip: bool) -> None:
        self.mtp.skip_topk = skip

    def compact_topk_indices(self, last_token_indices: Tensor) -> None:
        self.mtp.compact(last_token_indices)

    def set_append_recent(self, on: bool) -> None:
        self.mtp.append_recent = on

    def set_use_target_topk(self, on: bool) -> None:
        self.mtp.use_target_topk = on

    def forward_train(self, seq: Tensor, mode: str, topk: int) -> tuple[Tensor, Tensor, Tensor]:
        """seq [B, T + 2] -> (next-token loss, MTP next-next-token loss, summed indexer KL)."""
        T = seq.shape[1] - 2
        rope = (self.cos[:T][None], self.sin[:T][None], self.icos[:T][None], self.isin[:T][None])
        x, kls = self.tok_embeddings(seq[:, :T]), []
        for layer in self.layers:
            x, kl = layer.forward_train(x, rope, mode, topk)
            kls.append(kl)
        loss = F.cross_entropy(self.output(self.norm(x)).flatten(0, 1), seq[:, 1:T + 1].flatten())
        h, kl = self.mtp.forward_train(self.tok_embeddings(seq[:, 1:T + 1]), x, rope, mode, topk)
        kls.append(kl)
        mtp_loss = F.cross_entropy(self.output(self.norm(h)).flatten(0, 1), seq[:, 2:].flatten())
        kl_sum = sum((k for k in kls if k is not None), torch.zeros((), device=seq.device))
        return loss, mtp_loss, kl_sum


def _init_weights(m: nn.Module) -> None:
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, std=0.02)
