"""register() can run any number of times in a process: the real classes are wrapped once,
and uninstall restores them exactly."""

from __future__ import annotations

import pytest

mtp_mod = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator")
base_mod = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator")

from mtpsim.vllm_plugin import register  # noqa: E402
from mtpsim.vllm_plugin.contract import HOOKS  # noqa: E402
from mtpsim.vllm_plugin.patch import STATE_ATTR, uninstall  # noqa: E402
from mtpsim.vllm_plugin.settings import PluginConfigError  # noqa: E402

MTP = mtp_mod.MTPSpeculator


def test_registering_three_times_wraps_each_hook_once(monkeypatch, tmp_path):
    before = {name: vars(MTP).get(name) for name in (*HOOKS, "load_draft_model", "propose")}
    monkeypatch.setenv("MTPSIM_POLICY", "fresh")
    monkeypatch.setenv("MTPSIM_TRACE_DIR", str(tmp_path))
    try:
        register()
        first = {name: vars(MTP)[name] for name in HOOKS}
        register()
        register()
        assert {name: vars(MTP)[name] for name in HOOKS} == first
        for name in HOOKS:
            assert vars(MTP)[name].__mtpsim_wrapped__ is before[name]
        assert "propose" in vars(MTP)  # wrapped on the subclass; the base class is untouched
        assert "__mtpsim_wrapped__" not in vars(base_mod.TargetDependentARSpeculator.propose)
    finally:
        uninstall()
    assert {name: vars(MTP).get(name) for name in before} == before
    assert STATE_ATTR not in vars(MTP)


def test_a_second_register_with_other_settings_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("MTPSIM_TRACE_DIR", str(tmp_path))
    monkeypatch.setenv("MTPSIM_POLICY", "fresh")
    try:
        register()
        monkeypatch.setenv("MTPSIM_POLICY", "share")
        with pytest.raises(PluginConfigError, match="already installed"):
            register()
    finally:
        uninstall()
