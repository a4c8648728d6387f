"""The plugin, wrapped around vLLM 0.33.0's real MTPSpeculator hooks, counts the MTP layer's
indexer calls per draft step and tells whether sharing engaged."""

from __future__ import annotations

import pytest
from _vllm_fakes import FakeDraftModel, installed, load, make_speculator, propose

from mtpsim.vllm_plugin.counts import read_counts, sharing_verdict
from mtpsim.vllm_plugin.settings import PluginSettings

MTPSpeculator = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator").MTPSpeculator


@pytest.mark.parametrize("attention", ["generic", "cuda-fused"])
@pytest.mark.parametrize("hf_share", [False, True])
def test_share_policy_skips_the_indexer_at_steps_one_and_later(tmp_path, monkeypatch, hf_share,
                                                               attention):
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=3, hf_share=hf_share)
        draft = load(spec, monkeypatch, FakeDraftModel(attention=attention))
        assert spec.share_mtp_topk_indices is True
        for _ in range(5):
            propose(spec, draft, [40, 90])
        rec.flush()
    steps = rec.counts.contexts["propose"]
    assert steps.forwards == [5, 5, 5]
    assert steps.indexer == [5, 0, 0]
    assert draft.model.attn.indexer.calls == 5
    verdict = sharing_verdict(read_counts(tmp_path)[0])
    assert verdict.engaged is True
    assert verdict.line().startswith("sharing engaged: yes (propose")


@pytest.mark.parametrize("attention", ["generic", "cuda-fused"])
def test_fresh_policy_forces_sharing_off_even_when_the_model_asks_for_it(tmp_path, monkeypatch,
                                                                         attention):
    with installed(PluginSettings("fresh", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=3, hf_share=True)
        draft = load(spec, monkeypatch, FakeDraftModel(attention=attention))
        assert spec.share_mtp_topk_indices is False
        propose(spec, draft, [40, 90])
    assert rec.counts.contexts["propose"].indexer == [1, 1, 1]
    verdict = sharing_verdict(rec.counts)
    assert verdict.engaged is False
    assert "step 1: 1/1" in verdict.line()


def test_an_indexer_run_at_a_shared_step_reads_as_not_engaged(tmp_path, monkeypatch):
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=3)
        draft = load(spec, monkeypatch, FakeDraftModel())
        # A graph or compiled path that baked the branch: skip_topk is ignored.
        monkeypatch.setattr(draft.model, "set_skip_topk", lambda skip: None)
        propose(spec, draft, [40])
    assert sharing_verdict(rec.counts).engaged is False


def test_no_decode_steps_observed_reads_as_unknown(tmp_path):
    with installed(PluginSettings("share", tmp_path)) as rec:
        pass
    assert sharing_verdict(rec.counts).engaged is None


def test_capture_counts_show_what_the_cuda_graphs_baked_in(tmp_path, monkeypatch):
    import torch

    tdar = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator")

    def fake_capture(self):  # the hook bracketing of TargetDependentARSpeculator.capture
        draft = self.model
        self.last_token_indices = torch.zeros(8, dtype=torch.long)
        self.on_prefill_begin(8)
        for n in (1, 2, 4, 8):  # one captured graph per batch size
            draft(torch.zeros(n * 4, 4), torch.arange(n * 4) + 10)
        self.on_prefill_end(8)
        self.on_multi_step_decode_begin(8)
        for n in (1, 2, 4, 8):
            for _ in range(self.num_speculative_steps - 1):
                draft(torch.zeros(n, 4), torch.arange(n) + 20)
        self.on_multi_step_decode_end(8)

    monkeypatch.setattr(tdar.TargetDependentARSpeculator, "capture", fake_capture)
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=3)
        load(spec, monkeypatch, FakeDraftModel())
        spec.capture()
    cap = rec.counts.contexts["capture"]
    assert (cap.forwards, cap.indexer) == ([4, 8], [4, 0])
    assert rec.counts.contexts["propose"].forwards == []
    verdict = sharing_verdict(read_counts(tmp_path)[0])
    assert verdict.engaged is True and verdict.context == "capture"


def test_a_forked_worker_writes_its_own_counts_file(tmp_path):
    import os

    with installed(PluginSettings("fresh", tmp_path)) as rec:
        rec.flush()  # the parent (vLLM's API server) after install
        pid = os.fork()
        if pid == 0:  # a worker forked with the patched class and recorder
            try:
                rec.counts.contexts["propose"].bump("forwards", 0)
                rec.flush()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
    files = sorted(p.name for p in tmp_path.glob("vllm-counts-*.json"))
    assert files == sorted([f"vllm-counts-{os.getpid()}.json", f"vllm-counts-{pid}.json"])
    assert {c.pid for c in read_counts(tmp_path)} == {os.getpid(), pid}
