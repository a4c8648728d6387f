"""benchmarks/campaign_overlap.py: the overlap of the reused step-0 row with the fresh row obeys
its bounds, and after measuring, the positions the draft steps wrote hold what a clean draft
prefill writes (so later sample positions see clean caches)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from _reference_models import tiny_model

ROOT = Path(__file__).resolve().parents[1]


def _campaign():
    spec = importlib.util.spec_from_file_location("campaign_overlap",
                                                  ROOT / "benchmarks" / "campaign_overlap.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_overlap_bounds_and_clean_caches_after_measuring():
    camp = _campaign()
    model, k, K = tiny_model(), 3, 4
    tokens = torch.randint(1, 16, (48,), generator=torch.Generator().manual_seed(5)).tolist()
    where = {19: 20, 33: 34}
    rows = camp.measure_window(model, tokens, where, k, K, temperature=1.0, seed=0)
    assert len(rows) == len(where) * (k - 1) * len(camp.RATIOS)
    for r in rows:
        assert 0.0 <= r["overlap"] <= 1.0 and 0.0 <= r["mass"] <= 1.0 + 1e-9
        if r["ratio"] == 1:  # K = L covers every key up to p: only the s new keys can be missed
            assert r["overlap"] >= (r["context"] - r["step"]) / r["context"] - 1e-9
    assert any(r["overlap"] < 1.0 for r in rows if r["ratio"] > 1)
    after = model.mtp.block.attention.cache.ik[0].clone()
    W = max(where) + k + 1
    with torch.inference_mode():  # a clean run over the window: target, then draft step 0
        slots, tok = torch.zeros(1, dtype=torch.long), torch.tensor([tokens[:W + 1]])
        pos = torch.arange(W)[None]
        model.setup_caches(1, W, K)
        _, hidden = model(tok[:, :W], pos, slots, K)
        model.draft(tok[:, 1:W], hidden[:, :W - 1], pos[:, :W - 1], slots, K)
    clean = model.mtp.block.attention.cache.ik[0]
    assert torch.allclose(after[:W - 1], clean[:W - 1], atol=1e-9)


def test_bootstrap_ci_brackets_the_mean():
    camp = _campaign()
    import numpy as np

    lo, hi = camp.bootstrap_ci(np.array([0.2, 0.4, 0.5, 0.7]))
    assert lo < 0.45 < hi
