"""Model families: one module per family says what its layers are (`Family.layers`, a list of
`layers.Layer`), and `layers` says what each kind of layer costs. The roofline
(mtpsim.models.roofline), the memory model, the fitted cost features (mtpsim.models.cost) and the
reference engine (mtpsim.engine.model) read a model's layers from here, so a family built from
the existing layer kinds is one module plus a preset (and a line in `FAMILIES`); a new kind of
layer adds its parameters and costs to `layers` and its pricing to the roofline.

- `dsa_mla` (DeepSeek-V3.2, GLM-5.2): MLA layers with DSA, dense then MoE FFNs.
- `hybrid_linear_dsa`: linear-attention layers with every n-th layer MLA + DSA.
- `mla` (DeepSeek-V3/R1): MLA layers with dense attention over every earlier key (no indexer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtpsim.models.families.base import Family
from mtpsim.models.families.dsa_mla import DsaMla
from mtpsim.models.families.hybrid_linear_dsa import HybridLinearDsa
from mtpsim.models.families.layers import Layer, Stack
from mtpsim.models.families.mla import Mla

if TYPE_CHECKING:
    from mtpsim.spec import ModelSpec

FAMILIES: dict[str, Family] = {f.name: f for f in (DsaMla(), HybridLinearDsa(), Mla())}


def family_of(m: ModelSpec) -> Family:
    """The family of the model spec (`model.family`, checked against FAMILIES by the spec)."""
    return FAMILIES[m.family]


__all__ = ["FAMILIES", "Family", "Layer", "Stack", "family_of"]
