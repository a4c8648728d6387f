"""Target sampling and speculative rejection sampling (greedy, and the standard rule at T > 0)."""

from __future__ import annotations

import torch
from torch import Tensor


def sample(logits: Tensor, temperature: float, gen: torch.Generator) -> int:
    """logits [V] -> one token: argmax at temperature 0, else a draw from softmax(logits / T)."""
    if temperature == 0:
        return int(logits.argmax())
    return int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=gen))


def rejection_sample(target_logits: Tensor, drafts: Tensor, draft_probs: Tensor | None,
                     temperature: float, gen: torch.Generator) -> tuple[int, int]:
    """target_logits [k + 1, V], drafts [k], draft_probs [k, V] (None when greedy)
    -> (number of drafts accepted, the token that follows them: recovered or bonus).

    T > 0: draft i is accepted with probability min(1, p_i(d) / q_i(d)); on rejection the next
    token is drawn from norm(max(0, p_i - q_i)); if all k pass, the bonus is drawn from p_k.
    The output then has exactly the target's distribution."""
    k = drafts.shape[0]
    if temperature == 0:
        best = target_logits.argmax(-1)  # [k + 1]
        n = int((best[:k] == drafts).long().cumprod(0).sum())
        return n, int(best[n])
    assert draft_probs is not None, "sampled drafts need their probabilities"
    p = torch.softmax(target_logits / temperature, -1)
    u = torch.rand(k, generator=gen, device=p.device, dtype=p.dtype)
    for i in range(k):
        d = int(drafts[i])
        if u[i] * draft_probs[i, d] < p[i, d]:  # u < p/q without dividing by a zero q
            continue
        residual = (p[i] - draft_probs[i]).clamp(min=0)
        if float(residual.sum()) <= 0:
            residual = p[i]
        return i, int(torch.multinomial(residual, 1, generator=gen))
    return k, int(torch.multinomial(p[k], 1, generator=gen))
