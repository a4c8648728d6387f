"""DSA lightning indexer: I[t,s] = sum_h w[t,h] * relu(q_I[t,h] . k_I[s]), one shared key per token,
and the top-k selection over it (rows padded with -1 when fewer positions exist)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Indexer(nn.Module):
    """Scores each query against every earlier indexer key. Its input is detached during
    distillation so the KL to dense attention trains only the indexer (as DSA does)."""

    def __init__(self, dim: int, n_head: int, head_dim: int) -> None:
        super().__init__()
        self.n_head, self.head_dim = n_head, head_dim
        self.wq = nn.Linear(dim, n_head * head_dim, bias=False)
        self.wk = nn.Linear(dim, head_dim, bias=False)
        self.k_norm = nn.LayerNorm(head_dim)
        self.weights_proj = nn.Linear(dim, n_head, bias=False)

    def project(self, x: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """x [B, T, dim] -> q [B, T, HI, DI], k [B, T, DI], w [B, T, HI] (rope applied to q, k)."""
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.head_dim)
        k = self.k_norm(self.wk(x)).unsqueeze(2)  # [B, T, 1, DI]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin).squeeze(2)
        w = self.weights_proj(x) * (self.n_head * self.head_dim) ** -0.5
        return q, k, w


def index_scores(q: Tensor, k: Tensor, w: Tensor, q_pos: Tensor) -> Tensor:
    """q [B, T, HI, DI], k [B, S, DI] (keys at positions 0..S-1), w [B, T, HI], q_pos [B, T]
    -> causal scores [B, T, S], -inf where s > q_pos."""
    B, T, H, D = q.shape
    S = k.shape[1]
    s = torch.bmm(q.reshape(B, T * H, D), k.transpose(1, 2)).relu_()  # [B, T*H, S]
    scores = torch.bmm(w.reshape(B * T, 1, H), s.view(B * T, H, S)).view(B, T, S)
    key_pos = torch.arange(S, device=k.device)
    return scores.masked_fill(key_pos[None, None, :] > q_pos[:, :, None], float("-inf"))


def select_topk(scores: Tensor, topk: int) -> Tensor:
    """scores [B, T, S] -> indices [B, T, topk], best first, -1 where fewer positions exist.

    Ties (relu makes exact zeros common) go to the most recent position: the key is the score
    plus position * 2^-40 in float64, a function of (score, position) alone, so a query selects
    the same keys whatever S is (a k+1-token verify and a one-token decode agree)."""
    S = scores.shape[-1]
    n = min(topk, S)
    key = scores.double() + torch.arange(S, device=scores.device, dtype=torch.float64) * 2.0**-40
    vals, idx = key.topk(n, dim=-1, sorted=True)
    idx = idx.masked_fill(vals == float("-inf"), -1)
    if n < topk:
        idx = F.pad(idx, (0, topk - n), value=-1)
    return idx


def canonical(idx: Tensor) -> Tensor:
    """Sort a selection ascending with -1 padding last, so equal sets give bitwise-equal attention."""
    big = torch.iinfo(idx.dtype).max
    s = idx.masked_fill(idx < 0, big).sort(dim=-1).values
    return s.masked_fill(s == big, -1)


def topk_mask(idx: Tensor, num_keys: int) -> Tensor:
    """idx [B, T, K] with -1 padding -> bool mask [B, T, num_keys] of selected keys."""
    mask = torch.zeros(*idx.shape[:-1], num_keys + 1, dtype=torch.bool, device=idx.device)
    mask.scatter_(-1, idx.masked_fill(idx < 0, num_keys), True)
    return mask[..., :num_keys]


def overlap(used: Tensor, fresh: Tensor) -> Tensor:
    """Fraction of the fresh selection's valid entries present in the used one. [N, K] x2 -> [N]."""
    hit = (used[:, :, None] == fresh[:, None, :]) & (fresh[:, None, :] >= 0)
    n_fresh = (fresh >= 0).sum(-1).clamp(min=1)
    return hit.any(1).sum(-1) / n_fresh


def rope_cache(max_seq: int, head_dim: int, base: float) -> tuple[Tensor, Tensor]:
    """-> cos, sin [max_seq, head_dim // 2] (float64; cast at use)."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.outer(torch.arange(max_seq, dtype=torch.float64), inv)
    return ang.cos(), ang.sin()


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x [B, T, H, D], cos/sin [B, T, D/2] (already gathered at the token positions)."""
    x1, x2 = x.chunk(2, dim=-1)
    c, s = cos[:, :, None, :].to(x.dtype), sin[:, :, None, :].to(x.dtype)
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)
