"""Indexer counts that survive CUDA graphs: counted on the device, by ops the graphs replay.

Forward hooks run Python, and a CUDA-graph replay runs none, so under vLLM's CUDA graphs (on by
itself for DeepSeek-V3.2: vllm/config/vllm.py `DEFAULT_BREAKABLE_CUDAGRAPH_ARCHITECTURES`,
`VllmConfig._maybe_enable_breakable_cudagraph`) hooks see start-up capture only. Here the MTP
layer's sparse attention and its indexer each get a patched `forward` that first runs one
in-place `index_add_` on a registered buffer; eagerly that op runs, under capture it is recorded
into the graph and every replay runs it again, and under torch.compile it is traced into the
compiled graph.

Which draft step: vLLM's own device scalar `TargetDependentARSpeculator.current_draft_step`
(v1/worker/gpu/spec_decode/target_dependent_ar/speculator.py: `_prepare_prefill_inputs_kernel`
stores 0 before step 0, `_multi_step_decode` / `_fused_multi_step_decode` `fill_(step)` before
each later step), read on the device when the op runs. Which context: a device scalar the
plugin fills before each `propose` (served or start-up). The counts are read back (one device
sync) when the plugin flushes: every FLUSH_EVERY_S at the end of a draft round, and at exit.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

KINDS = ("forwards", "indexer")
CONTEXTS = ("served", "startup")
_BUFFERS = ("mtpsim_counts", "mtpsim_context", "mtpsim_step", "mtpsim_one")


class DeviceCounts:
    """A [context, kind, step] table of MTP forwards and indexer runs, counted on `step`'s
    device. `step` is the speculator's current-draft-step scalar (aliased, never copied)."""

    def __init__(self, num_steps: int, step: torch.Tensor) -> None:
        self.num_steps = max(int(num_steps), 1)
        dev = step.device
        with torch.inference_mode(False):  # normal tensors: updated in and out of inference mode
            self.table = torch.zeros(len(CONTEXTS) * len(KINDS) * self.num_steps,
                                     dtype=torch.int64, device=dev)
            self.context = torch.full((), CONTEXTS.index("startup"), dtype=torch.int64,
                                      device=dev)
            self.one = torch.ones(1, dtype=torch.int64, device=dev)
        self.step = step
        self.skip_python = False  # set around the plugin's own shadow forwards (eager only)

    def set_context(self, served: bool) -> None:
        """Stream-ordered: forwards and replays that follow count as served or start-up."""
        self.context.fill_(0 if served else 1)

    def attach(self, attention: torch.nn.Module, indexer_part: torch.nn.Module) -> None:
        """Count `attention`'s forwards and `indexer_part`'s (once per indexer run)."""
        for kind, module in zip(KINDS, (attention, indexer_part), strict=True):
            for name, buf in zip(_BUFFERS, (self.table, self.context, self.step, self.one),
                                 strict=True):
                module.register_buffer(name, buf, persistent=False)
            original = module.forward
            module.forward = functools.partial(_counting_forward, self, module, KINDS.index(kind),
                                               original)
            module.__mtpsim_forward__ = original  # the uncounted forward (shadow runs)

    def read(self) -> dict[str, dict[str, list[int]]]:
        """{context: {kind: [count per step]}} (synchronises with the device)."""
        flat = self.table.tolist()
        s, out = self.num_steps, {}
        for c, ctx in enumerate(CONTEXTS):
            base = c * len(KINDS) * s
            out[ctx] = {kind: flat[base + k * s: base + (k + 1) * s]
                        for k, kind in enumerate(KINDS)}
        return out


def bump(module: torch.nn.Module, kind: int, num_steps: int) -> None:
    """The counted op: table[context, kind, step] += 1, on the device, no host sync."""
    step = module.mtpsim_step.clamp(0, num_steps - 1)
    index = module.mtpsim_context * (len(KINDS) * num_steps) + kind * num_steps + step
    module.mtpsim_counts.index_add_(0, index.reshape(1), module.mtpsim_one)


def _counting_forward(counts: DeviceCounts, module: torch.nn.Module, kind: int,
                      original: Any, *args: Any, **kwargs: Any) -> Any:
    if not counts.skip_python:
        bump(module, kind, counts.num_steps)
    return original(*args, **kwargs)


def uncounted_forward(module: Any) -> Any:
    """`module`'s forward without the counting op (the plugin's shadow forward)."""
    return getattr(module, "__mtpsim_forward__", module.forward)
