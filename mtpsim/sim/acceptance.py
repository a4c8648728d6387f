"""The acceptance model lives in mtpsim.models.acceptance; re-exported for existing imports."""

from mtpsim.models.acceptance import AcceptanceModel, draw_accepted, spread_offsets

__all__ = ["AcceptanceModel", "draw_accepted", "spread_offsets"]
