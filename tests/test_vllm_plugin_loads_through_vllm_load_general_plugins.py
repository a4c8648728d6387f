"""vLLM 0.33.0's own plugin loader finds mtpsim's entry point and the plugin patches the real
MTPSpeculator; without MTPSIM_POLICY the same load leaves vLLM untouched."""

from __future__ import annotations

import pytest

vllm_plugins = pytest.importorskip("vllm.plugins")
mtp_mod = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator")

from mtpsim.vllm_plugin.patch import STATE_ATTR, uninstall  # noqa: E402


@pytest.fixture
def fresh_loader(monkeypatch):
    monkeypatch.setattr(vllm_plugins, "plugins_loaded", False)
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    yield
    uninstall()


def test_the_entry_point_is_registered_in_the_vllm_group():
    found = vllm_plugins.load_plugins_by_group(vllm_plugins.DEFAULT_PLUGINS_GROUP)
    from mtpsim.vllm_plugin import register

    assert found.get("mtpsim") is register


def test_load_general_plugins_patches_the_real_speculator(fresh_loader, monkeypatch, tmp_path):
    monkeypatch.setenv("MTPSIM_POLICY", "share")
    monkeypatch.setenv("MTPSIM_TRACE_DIR", str(tmp_path))
    vllm_plugins.load_general_plugins()
    rec = vars(mtp_mod.MTPSpeculator)[STATE_ATTR]
    assert rec.settings.policy == "share"
    assert mtp_mod.MTPSpeculator.on_prefill_end.__mtpsim_wrapped__ is not None


def test_without_a_policy_vllm_is_left_alone(fresh_loader, monkeypatch):
    monkeypatch.delenv("MTPSIM_POLICY", raising=False)
    before = dict(vars(mtp_mod.MTPSpeculator))
    vllm_plugins.load_general_plugins()
    assert dict(vars(mtp_mod.MTPSpeculator)) == before
