"""What the plugin was asked to do, read once from the environment (torch- and vllm-free)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.policies import policies_where

ENV_POLICY = "MTPSIM_POLICY"
ENV_TRACE_DIR = "MTPSIM_TRACE_DIR"
ENV_TRACE = "MTPSIM_TRACE"

# vLLM can express only fresh and share (declared in mtpsim.policies): share_recent and
# target_share need model code vLLM lacks.
VLLM_POLICIES = policies_where(lambda t: t.vllm)


class PluginConfigError(RuntimeError):
    """The plugin's environment is inconsistent; raised inside vLLM so the server stops."""


@dataclass(frozen=True, slots=True)
class PluginSettings:
    policy: str
    trace_dir: Path | None = None
    trace: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PluginSettings | None:
        env = os.environ if env is None else env
        policy = env.get(ENV_POLICY, "").strip()
        if not policy:
            return None
        if policy not in VLLM_POLICIES:
            raise PluginConfigError(f"mtpsim plugin: {ENV_POLICY}={policy!r}; expected one of "
                                    f"{', '.join(VLLM_POLICIES)} (the policies vLLM can run)")
        trace_dir = env.get(ENV_TRACE_DIR, "").strip()
        trace = env.get(ENV_TRACE, "").strip() in ("1", "true", "yes")
        if trace and not trace_dir:
            raise PluginConfigError(f"mtpsim plugin: {ENV_TRACE}=1 needs {ENV_TRACE_DIR}")
        return cls(policy, Path(trace_dir) if trace_dir else None, trace)

    def to_env(self) -> dict[str, str]:
        """The environment that makes `from_env` return these settings (for the runner)."""
        env = {ENV_POLICY: self.policy, ENV_TRACE: "1" if self.trace else "0"}
        if self.trace_dir is not None:
            env[ENV_TRACE_DIR] = str(self.trace_dir)
        return env


SHARE_FIELD = "index_share_for_mtp_iteration"


def speculative_config_setting(policy: str) -> dict[str, bool]:
    """The `--speculative-config` entry that selects `policy` on vLLM 0.33.0."""
    if policy not in VLLM_POLICIES:
        raise ValueError(f"policy {policy!r}: vLLM runs only {', '.join(VLLM_POLICIES)}")
    return {SHARE_FIELD: policy == "share"}


def installed_speculative_config_fields() -> dict[str, Any]:
    """Field name -> type of the installed vLLM's `SpeculativeConfig` (imports vllm.config)."""
    from vllm.config import SpeculativeConfig

    return {f.name: f.type for f in dataclasses.fields(SpeculativeConfig)}


def policy_speculative_config(policy: str, base: Mapping[str, Any],
                              fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`base` (method, num_speculative_tokens, ...) plus the policy's setting, every value
    validated against the installed `SpeculativeConfig` field types. Where the installed vLLM
    lacks the sharing field the setting is left out: the plugin then forces the policy."""
    from pydantic import TypeAdapter, ValidationError

    fields = installed_speculative_config_fields() if fields is None else fields
    out = dict(base)
    if SHARE_FIELD in fields:
        out.update(speculative_config_setting(policy))
    for key, value in out.items():
        if key not in fields:
            raise PluginConfigError(f"speculative config: {key!r} is not a field of the "
                                    "installed vLLM's SpeculativeConfig")
        try:
            TypeAdapter(fields[key]).validate_python(value, strict=True)
        except ValidationError as e:
            raise PluginConfigError(f"speculative config: {key}={value!r} does not fit "
                                    f"SpeculativeConfig ({e.errors()[0]['msg']})") from None
    return out
