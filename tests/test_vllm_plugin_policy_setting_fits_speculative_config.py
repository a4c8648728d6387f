"""Each policy becomes a `--speculative-config` setting that the installed vLLM 0.33.0's
SpeculativeConfig accepts field by field; where the field is missing the plugin forces it."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("vllm.config")

from mtpsim.vllm_plugin.settings import (  # noqa: E402
    SHARE_FIELD,
    PluginConfigError,
    PluginSettings,
    installed_speculative_config_fields,
    policy_speculative_config,
)

BASE = {"method": "mtp", "num_speculative_tokens": 3}


@pytest.mark.parametrize(("policy", "share"), [("fresh", False), ("share", True)])
def test_policies_map_to_the_real_index_share_field(policy, share):
    assert installed_speculative_config_fields()[SHARE_FIELD] == bool | None
    cfg = policy_speculative_config(policy, BASE)
    assert cfg == {**BASE, SHARE_FIELD: share}
    assert json.loads(json.dumps(cfg)) == cfg


def test_a_vllm_without_the_field_gets_no_setting_and_the_plugin_forces_it():
    fields = {k: v for k, v in installed_speculative_config_fields().items() if k != SHARE_FIELD}
    assert policy_speculative_config("share", BASE, fields) == BASE


def test_values_that_do_not_fit_are_refused():
    with pytest.raises(PluginConfigError, match="num_speculative_tokens"):
        policy_speculative_config("share", {**BASE, "num_speculative_tokens": "three"})
    with pytest.raises(PluginConfigError, match="not a field"):
        policy_speculative_config("share", {**BASE, "num_spec_tokens": 3})


def test_unknown_policies_are_refused_at_start_up():
    with pytest.raises(PluginConfigError, match="fresh, share"):
        PluginSettings.from_env({"MTPSIM_POLICY": "share_recent"})
    assert PluginSettings.from_env({}) is None


def test_the_runner_environment_reads_back_as_the_same_settings(tmp_path):
    for settings in (PluginSettings("fresh", tmp_path), PluginSettings("share", tmp_path, True)):
        assert PluginSettings.from_env(settings.to_env()) == settings
    with pytest.raises(PluginConfigError, match="MTPSIM_TRACE_DIR"):
        PluginSettings.from_env({"MTPSIM_POLICY": "share", "MTPSIM_TRACE": "1"})
