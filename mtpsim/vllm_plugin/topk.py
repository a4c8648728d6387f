"""Top-k row comparisons on tensors (torch; used inside vLLM workers and by tests on CPU)."""

from __future__ import annotations

import torch


def row_overlap(reused: torch.Tensor, fresh: torch.Tensor) -> torch.Tensor:
    """Per row, the fraction of `fresh`'s valid entries (>= 0) that `reused` also holds.

    reused, fresh: [num_rows, top_k] integer indices, -1-padded; returns [num_rows] float.
    Sort + binary search keeps memory at O(rows x top_k), not O(rows x top_k^2).
    """
    reused_sorted, _ = torch.sort(reused.to(torch.int64), dim=1)
    fresh = fresh.to(torch.int64)
    pos = torch.searchsorted(reused_sorted, fresh).clamp_(max=reused_sorted.shape[1] - 1)
    valid = fresh >= 0
    hit = (reused_sorted.gather(1, pos) == fresh) & valid
    return hit.sum(1).float() / valid.sum(1).clamp(min=1).float()


def rows_equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[num_rows] bool: row i of `a` equals row i of `b` element for element."""
    return (a == b).all(dim=1)
