"""DeepSeek-V3's family (deepseek_v3; DeepSeek-R1, V3-0324 and V3.1 share the architecture): every
layer MLA with DENSE attention over every earlier key (no lightning indexer, no top-k), the first
`num_dense_layers` with a dense FFN, the rest MoE; the MTP layer is MLA + MoE without an indexer.
The `index_*` model fields are not used (0 in the preset): the roofline prices its attention with
`CostModel._dense_attention` (absorbed MQA decode over the latent cache) and
`CostModel._dense_prefill_attention` (vLLM's non-absorbed MHA prefill)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtpsim.models.families.base import Family
from mtpsim.models.families.layers import DENSE, MLA, MOE, Layer

if TYPE_CHECKING:
    from mtpsim.spec import ModelSpec


class Mla(Family):
    name = "mla"
    dense_attention = True

    def layers(self, m: ModelSpec) -> tuple[Layer, ...]:
        return tuple(Layer(MLA, False, DENSE if i < m.num_dense_layers else MOE)
                     for i in range(m.num_layers))

    def mtp_layer(self, m: ModelSpec) -> Layer:
        """DeepSeek-V3's MTP module: an MLA layer (dense attention, no indexer) and a MoE FFN."""
        return Layer(MLA, False, MOE)
