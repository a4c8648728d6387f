"""Trace mode computes a fresh top-k in shadow at shared steps, records its overlap with the
shared row, and leaves the shared rows in place; it also checks the compaction."""

from __future__ import annotations

import json

import pytest
import torch
from _vllm_fakes import TOP_K, FakeDraftModel, installed, load, make_speculator, propose

from mtpsim.vllm_plugin.settings import PluginConfigError, PluginSettings

MTPSpeculator = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator").MTPSpeculator


def _rows(tmp_path):
    return [json.loads(line) for p in tmp_path.glob("vllm-trace-*.jsonl")
            for line in p.read_text().splitlines()]


@pytest.mark.parametrize("attention", ["generic", "cuda-fused"])
def test_shadow_overlap_matches_the_window_shift_and_drafts_keep_the_shared_rows(
        tmp_path, monkeypatch, attention):
    with installed(PluginSettings("share", tmp_path, trace=True)) as rec:
        spec = make_speculator(MTPSpeculator, k=3)
        draft = load(spec, monkeypatch, FakeDraftModel(attention=attention))
        propose(spec, draft, [40, 90])
        rec.flush()
    # Fresh rows at step s are the window ending at p + s: it shares TOP_K - s entries.
    overlaps = {(r["req"], r["step"]): r["overlap"] for r in _rows(tmp_path)}
    assert overlaps == {(str(i), s): (TOP_K - s) / TOP_K for i in range(2) for s in (1, 2)}
    assert rec.counts.contexts["propose"].shadow == [0, 1, 1]
    assert rec.counts.contexts["propose"].indexer == [1, 0, 0]
    # Forwards: step 0, then per shared step a shadow (fresh rows) and the real one.
    step0, shadow1, real1, shadow2, real2 = draft.model.attn.used_rows
    step0_last = step0[[3, 7]]  # each request's last verified slot
    assert torch.equal(real1, step0_last) and torch.equal(real2, step0_last)
    assert torch.equal(shadow2[:, 0], step0_last[:, 0] + 2)  # fresh: the window moved on
    assert torch.equal(draft.model.attn.topk_indices_buffer[:2], step0_last)
    assert (rec.counts.compaction_rows_checked, rec.counts.compaction_rows_wrong) == (2, 0)


def test_a_compaction_that_does_not_gather_rows_is_caught(tmp_path, monkeypatch):
    with installed(PluginSettings("share", tmp_path, trace=True)) as rec:
        spec = make_speculator(MTPSpeculator, k=3)
        load(spec, monkeypatch, draft := FakeDraftModel(broken_compaction=True))
        propose(spec, draft, [40, 90])
    assert rec.counts.compaction_rows_wrong == 2


def test_trace_mode_refuses_cuda_graphs(tmp_path, monkeypatch):
    with installed(PluginSettings("share", tmp_path, trace=True)):
        spec = make_speculator(MTPSpeculator, eager=False)
        with pytest.raises(PluginConfigError, match="--enforce-eager"):
            load(spec, monkeypatch, FakeDraftModel())
