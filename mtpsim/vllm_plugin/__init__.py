"""mtpsim's vLLM plugin (entry point group `vllm.general_plugins`, `register`).

vLLM calls `register()` in every process it starts (API server, engine core, workers), maybe
more than once per process. With no `MTPSIM_POLICY` in the environment it does nothing, so
installing mtpsim never changes a plain vLLM run. With it set, it checks that the installed
vLLM has the 0.33.0 MTP speculator shape (else stops vLLM with a message naming the version),
forces the policy onto `MTPSpeculator.share_mtp_topk_indices`, counts the MTP layer's indexer
invocations per draft step, and in trace mode records top-k overlap and acceptance. Environment:

    MTPSIM_POLICY     fresh | share (required to activate the plugin)
    MTPSIM_TRACE_DIR  folder for the per-process count files and trace rows
    MTPSIM_TRACE      1: shadow-compute a fresh top-k at shared steps (eager mode only)
"""

from __future__ import annotations

from mtpsim.vllm_plugin.settings import PluginSettings


def register() -> None:
    """vLLM's entry point: re-entrant and idempotent; a no-op without `MTPSIM_POLICY`."""
    settings = PluginSettings.from_env()
    if settings is None:
        return
    from mtpsim.vllm_plugin.patch import install

    install(settings)


__all__ = ["PluginSettings", "register"]
