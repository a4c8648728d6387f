"""In trace mode the wrapped `propose` (vLLM 0.33.0's real signature) records one row per
verified request, and the rows pair with the previous call's overlaps into a valid Trace."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from _vllm_fakes import installed, make_speculator

from mtpsim.trace import read_trace
from mtpsim.trace_records import TraceMeta
from mtpsim.vllm_plugin.settings import PluginSettings
from mtpsim.vllm_runner.trace import read_rows, rows_to_trace

tdar = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator")
MTPSpeculator = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator").MTPSpeculator


def _batch(req_ids, drafted, seq_lens):
    return SimpleNamespace(num_reqs=len(drafted), req_ids=req_ids,
                           num_draft_tokens_per_req=np.array(drafted),
                           seq_lens=torch.tensor(seq_lens))


def test_propose_rows_and_overlaps_pair_into_trace_steps(tmp_path, monkeypatch):
    real = tdar.TargetDependentARSpeculator.propose
    seen = []

    def fake_propose(self, *args, **kwargs):  # the real signature, no GPU work
        seen.append(inspect.signature(real).bind(self, *args, **kwargs).arguments)
        return "drafts"

    fake_propose.__signature__ = inspect.signature(real)
    monkeypatch.setattr(tdar.TargetDependentARSpeculator, "propose", fake_propose)
    with installed(PluginSettings("share", tmp_path, trace=True)) as rec:
        spec = make_speculator(MTPSpeculator)
        extra = dict(attn_metadata={}, slot_mappings={}, last_hidden_states=None,
                     aux_hidden_states=None, num_rejected=None, last_sampled=None,
                     next_prefill_tokens=None, temperature=None, seeds=None)
        # Call 1: "a" verifies 3 drafts (2 accepted: 3 sampled), "b" is still prefilling.
        assert spec.propose(_batch(["a", "b"], [3, 0], [100, 40]),
                            num_sampled=torch.tensor([3, 1]), **extra) == "drafts"
        for step, ov in ((1, 0.9), (2, 0.8)):  # what call 1's shared draft steps measured
            rec.add_trace({"kind": "overlap", "call": 1, "req": "a", "step": step,
                           "overlap": ov})
        # Call 2: "a" had all 3 accepted, "b" 0 of 3.
        spec.propose(_batch(["a", "b"], [3, 3], [103, 41]), num_sampled=torch.tensor([4, 1]),
                     **extra)
        rec.flush()
    assert len(seen) == 2
    trace = rows_to_trace(read_rows(tmp_path), "share", 3, 2048, meta=TraceMeta())
    path = tmp_path / "share.trace.jsonl"
    trace.write(path)
    back = read_trace(path)
    assert [s.step for s in back.steps] == [1, 2]
    (a1,) = back.steps[0].requests
    # seq_len 100 counts the 3 drafts verified: the context before them is 97 tokens
    assert (a1.id, a1.context_len, a1.accepted, a1.overlap) == ("a", 97, [1, 1, 0], [])
    a2, b2 = back.steps[1].requests
    assert (a2.accepted, a2.overlap) == ([1, 1, 1], [0.9, 0.8])
    assert (b2.id, b2.accepted, b2.overlap) == ("b", [0, 0, 0], [])
    assert back.accepted_per_pos() == [2, 2, 1]
    assert back.engine == "vllm"
