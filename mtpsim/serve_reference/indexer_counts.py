"""The vLLM plugin's per-draft-step indexer counts, taken the same way on the reference
engine: its policy's four hooks give the draft phase, forward hooks on its MTP module give
the forwards and whether the MTP indexer ran (the module's own `indexer_calls` moved)."""

from __future__ import annotations

from typing import Any

from mtpsim.vllm_plugin.counts import PluginCounts

HOOKS = ("on_prefill_begin", "on_prefill_end", "on_multi_step_decode_begin",
         "on_multi_step_decode_end")


class IndexerCounter:
    def __init__(self, engine: Any) -> None:
        self.counts = PluginCounts(policy=engine.cfg.policy, hooked_layers=1)
        self.phase = "idle"
        self.decode_forwards = 0
        self._mark = 0
        self._step: int | None = None
        self._mtp = engine.model.mtp
        policy = engine.policy
        for name in HOOKS:  # instance attributes shadow the class's hooks
            setattr(policy, name, self._hook(name, getattr(policy, name)))
        self._mtp.register_forward_pre_hook(self._pre)
        self._mtp.register_forward_hook(self._post)

    def _hook(self, name: str, orig: Any) -> Any:
        def wrapper(num_reqs: int) -> None:
            if name == "on_prefill_begin":
                self.phase = "prefill"
            orig(num_reqs)
            if name == "on_multi_step_decode_begin":
                self.phase, self.decode_forwards = "decode", 0
            elif name in ("on_prefill_end", "on_multi_step_decode_end"):
                self.phase = "idle"
        return wrapper

    def _pre(self, module: Any, args: Any) -> None:
        if self.phase == "prefill":
            self._step = 0
        elif self.phase == "decode":
            self.decode_forwards += 1
            self._step = self.decode_forwards
        else:
            self._step = None
            return
        self._mark = self._mtp.indexer_calls
        self.counts.contexts["propose"].bump("forwards", self._step)

    def _post(self, module: Any, args: Any, output: Any) -> None:
        if self._step is not None and self._mtp.indexer_calls > self._mark:
            self.counts.contexts["propose"].bump("indexer", self._step)
