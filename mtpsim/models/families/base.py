"""What a model family declares: its target's layers in order, its MTP layer, and which model
fields it needs (checked once when the spec is read)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from mtpsim.models.families.layers import MLA, MOE, Layer, Stack

# The top-k a dense-attention family's queries select: larger than any context, so every
# min(context, top-k) in the simulator is the context (each query reads every earlier key)
DENSE_TOPK = 1 << 30
INDEXER_FIELDS = ("index_n_heads", "index_head_dim", "index_topk", "num_indexer_layers")

if TYPE_CHECKING:
    from mtpsim.spec import ModelSpec


class Family(ABC):
    name: ClassVar[str]
    # True: attention reads every earlier key (no DSA indexer / top-k): DeepSeek-V3/R1's MLA
    dense_attention: ClassVar[bool] = False
    # True: the reference engine's small DSA + MTP model (mtpsim.engine.model) stands in for this
    # family's models in run-real --engine reference (same layer kinds: MLA + indexer + MoE + MTP)
    reference_stand_in: ClassVar[bool] = False

    @abstractmethod
    def layers(self, m: ModelSpec) -> tuple[Layer, ...]:
        """The target's decoder layers in order (MTP layers excluded)."""

    def mtp_layer(self, m: ModelSpec) -> Layer:
        """One MTP layer: DeepSeek-V3's MTP module is an MLA layer with its own indexer and a
        MoE FFN (and the eh_proj the roofline prices apart)."""
        return Layer(MLA, True, MOE)

    def stack(self, m: ModelSpec) -> Stack:
        return Stack.of(self.layers(m))

    def check(self, m: ModelSpec) -> tuple[str, str] | None:
        """(model field, what was expected) when `m` cannot be of this family, else None:
        a DSA family needs its indexer's fields."""
        if not self.dense_attention:
            for key in INDEXER_FIELDS:
                if getattr(m, key) < 1:
                    return key, (f"expected >= 1 for family {self.name!r} "
                                 f"(DSA: its lightning indexer), got {getattr(m, key)}")
        return None
