"""A hybrid of linear attention and DSA (the pattern of Kimi Linear, whose full-attention layers
are MLA, with DSA on them, as GLM-5.3-Flash-style hybrids are described): layer i (counted from
1) is an MLA layer with its own lightning indexer when i is a multiple of
`full_attention_period` or the last layer, else a linear-attention layer (`linear_num_heads` x
`linear_head_dim`, a recurrent state per request: no KV cache, no indexer, a cost per token that
does not grow with context). The first `num_dense_layers` have a dense FFN, the rest MoE; the MTP
layer is DeepSeek's (MLA + DSA + MoE)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtpsim.models.families.base import Family
from mtpsim.models.families.layers import DENSE, LINEAR, MLA, MOE, Layer

if TYPE_CHECKING:
    from mtpsim.spec import ModelSpec


class HybridLinearDsa(Family):
    name = "hybrid_linear_dsa"

    def layers(self, m: ModelSpec) -> tuple[Layer, ...]:
        period, n = m.full_attention_period, m.num_layers
        out = []
        for i in range(n):
            full = (i + 1) % period == 0 or i == n - 1
            out.append(Layer(MLA if full else LINEAR, full, DENSE if i < m.num_dense_layers else MOE))
        return tuple(out)

    def check(self, m: ModelSpec) -> tuple[str, str] | None:
        if (bad := super().check(m)) is not None:
            return bad
        for key in ("full_attention_period", "linear_num_heads", "linear_head_dim"):
            if getattr(m, key) < 1:
                return key, f"expected a positive integer for family {self.name!r}"
        full = self.stack(m).mla
        if m.num_indexer_layers != full:
            return ("num_indexer_layers", f"expected {full} (one indexer per MLA layer of "
                    f"{self.name!r}: layers {m.full_attention_period}, "
                    f"{2 * m.full_attention_period}, ... and the last), got {m.num_indexer_layers}")
        return None
