"""The verdict says whether its counts came from served requests or only from start-up runs:
vLLM 0.33.0 calls `propose(dummy_run=True)` while profiling and for DP-sync batches, and runs
real batches of its own `_v2_mixed_warmup_*` requests before serving."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from _vllm_fakes import FakeDraftModel, installed, load, make_speculator, propose

from mtpsim.vllm_plugin.counts import sharing_verdict
from mtpsim.vllm_plugin.settings import PluginSettings

mtp_mod = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator")
tdar = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator")


@pytest.fixture
def fake_propose(monkeypatch):
    """TargetDependentARSpeculator.propose with its 0.33.0 keywords, driving the hooks."""
    def fake(self, input_batch, attn_metadata, slot_mappings, last_hidden_states,
             aux_hidden_states, num_sampled, num_rejected, last_sampled, next_prefill_tokens,
             temperature, seeds, dp_sync_state=None, dummy_run=False,
             skip_attn_for_dummy_run=False, mm_inputs=None, is_profile=False,
             num_speculative_tokens=None):
        propose(self, self.model, [40 + i for i in range(input_batch.num_reqs)])

    monkeypatch.setattr(tdar.TargetDependentARSpeculator, "propose", fake)


def _call(spec, req_ids, dummy_run=False):
    n = len(req_ids)
    batch = SimpleNamespace(num_reqs=n, req_ids=req_ids, num_draft_tokens_per_req=None,
                            seq_lens=torch.full((n,), 50))
    spec.propose(input_batch=batch, attn_metadata={}, slot_mappings={},
                 last_hidden_states=None, aux_hidden_states=None,
                 num_sampled=torch.ones(n, dtype=torch.int32), num_rejected=None,
                 last_sampled=None, next_prefill_tokens=None, temperature=None, seeds=None,
                 dummy_run=dummy_run)


def test_only_start_up_runs_are_said_to_be_start_up(tmp_path, monkeypatch, fake_propose):
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(mtp_mod.MTPSpeculator, k=3)
        load(spec, monkeypatch, FakeDraftModel())
        _call(spec, ["_dummy_req_0", "_dummy_req_1"], dummy_run=True)  # profile_run
        _call(spec, ["_v2_mixed_warmup_decode_"])  # MRV2 warm-up: real batch, vLLM's own ids
    assert rec.counts.contexts["dummy"].forwards == [2, 2, 2]
    assert rec.counts.contexts["propose"].forwards == []
    verdict = sharing_verdict(rec.counts)
    assert verdict.engaged is True and verdict.context == "dummy"
    assert verdict.line().endswith("counts only from start-up runs (profiling, warm-up, dummy "
                                   "batches), not served traffic)")


def test_served_requests_are_counted_as_served_traffic(tmp_path, monkeypatch, fake_propose):
    with installed(PluginSettings("share", tmp_path, trace=True)) as rec:
        spec = make_speculator(mtp_mod.MTPSpeculator, k=3)
        load(spec, monkeypatch, FakeDraftModel())
        _call(spec, ["_dummy_req_0"], dummy_run=True)
        _call(spec, ["cmpl-1", "cmpl-2"])
    assert rec.counts.contexts["propose"].forwards == [1, 1, 1]
    assert rec.counts.contexts["propose"].indexer == [1, 0, 0]
    assert rec.call == 1  # the dummy batch drew no trace rows
    verdict = sharing_verdict(rec.counts)
    assert verdict.context == "propose"
    assert verdict.line().endswith("counts from served traffic)")
