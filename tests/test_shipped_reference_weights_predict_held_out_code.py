"""The shipped reference weights load without pickle, fit the size budget, and predict held-out
standard-library code far better than chance (5.55 nats/byte), through the inference path with
sparse top-64 attention, for both the model and its MTP module."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mtpsim.engine import weights
from mtpsim.engine.corpus import joined

torch.set_num_threads(1)


def test_shipped_weights_are_small_and_described():
    meta = weights.read_meta()
    assert weights.BUILTIN.stat().st_size <= 20 * 2**20
    assert meta["config"]["vocab_size"] == 256 and meta["seed"] == 0
    assert {"A", "B", "C"} <= set(meta["phases"])


@pytest.mark.slow
@torch.inference_mode()
def test_held_out_loss_through_the_sparse_inference_path_is_sane():
    model = weights.load()
    held = np.frombuffer(joined(held_out=True), dtype=np.uint8)
    T, topk = 512, 64
    seqs = torch.tensor(np.stack([held[i * 200_003:i * 200_003 + T + 2] for i in range(2)])).long()
    model.setup_caches(2, T + 2, topk)
    pos = torch.arange(T)[None].expand(2, T)
    logits, hidden = model(seqs[:, :T], pos, torch.arange(2), topk)
    main = F.cross_entropy(logits.flatten(0, 1), seqs[:, 1:T + 1].flatten()).item()
    d_logits, _ = model.draft(seqs[:, 1:T + 1], hidden, pos, torch.arange(2), topk)
    mtp = F.cross_entropy(d_logits.flatten(0, 1), seqs[:, 2:].flatten()).item()
    assert main < 2.0, main
    assert mtp < 2.6, mtp
