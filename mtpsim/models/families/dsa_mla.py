"""DeepSeek-V3.2's family (deepseek_v32; GLM-5.2's glm_moe_dsa too): every layer MLA with DSA
sparse attention; the first `num_dense_layers` have a dense FFN, the rest MoE. `num_indexer_layers`
of them run their own lightning indexer (all 61 in DeepSeek-V3.2; 21 "full" of 78 in GLM-5.2,
whose "shared" layers reuse the previous full layer's top-k), spread evenly over the stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtpsim.models.families.base import Family
from mtpsim.models.families.layers import DENSE, MLA, MOE, Layer

if TYPE_CHECKING:
    from mtpsim.spec import ModelSpec


class DsaMla(Family):
    name = "dsa_mla"
    reference_stand_in = True  # mtpsim.engine.model is a small model of this family

    def layers(self, m: ModelSpec) -> tuple[Layer, ...]:
        return dsa_mla_layers(m.num_layers, m.num_dense_layers, m.num_indexer_layers)


def dsa_mla_layers(n: int, dense: int, indexers: int) -> tuple[Layer, ...]:
    """`n` MLA + DSA layers, the first `dense` with a dense FFN, `indexers` of them with their
    own indexer (layer i has one when i * indexers / n reaches a new integer)."""
    return tuple(Layer(MLA, i == 0 or i * indexers // n != (i - 1) * indexers // n,
                       DENSE if i < dense else MOE) for i in range(n))
