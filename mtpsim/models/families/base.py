"""What a model family declares: its target's layers in order, its MTP layer, and which model
fields it needs (checked once when the spec is read)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from mtpsim.models.families.layers import MLA, MOE, Layer, Stack

if TYPE_CHECKING:
    from mtpsim.spec import ModelSpec


class Family(ABC):
    name: ClassVar[str]

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
        """(model field, what was expected) when `m` cannot be of this family, else None."""
        return None
