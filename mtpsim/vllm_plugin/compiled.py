"""Whether the plugin's forward hooks run per call or were traced into a compiled graph.

Compilation mode > 0 does not compile every model: vLLM compiles a module only when its class
carries `@support_torch_compile` (the decorator adds `TorchCompileWithNoGuardsWrapper` to its
bases and sets `do_not_compile` per instance). vLLM 0.33.0's CUDA DeepSeek-V3.2 MTP model
(`vllm.models.deepseek_v32.nvidia.mtp.DeepseekV32MTP`) has no such decorator, so its hooks run
eagerly even under `-O3`; the generic `DeepSeekMTP` (CPU/XPU) has one. Decided from the loaded
model, not from the mode alone.
"""

from __future__ import annotations

from typing import Any

STOCK_TORCH_COMPILE = 1  # vllm.config.CompilationMode: the runner wraps whole models itself


def compile_mode(vllm_config: Any) -> int:
    """vLLM's torch.compile mode (0 = none)."""
    mode = getattr(getattr(vllm_config, "compilation_config", None), "mode", 0)
    return int(getattr(mode, "value", mode) or 0)


def compiled_modules(model: Any) -> list[str]:
    """Names of the modules of `model` that vLLM will compile (`do_not_compile` is False)."""
    try:
        from vllm.compilation.wrapper import TorchCompileWithNoGuardsWrapper
    except ImportError:
        return []
    return [name or type(m).__name__ for name, m in model.named_modules()
            if isinstance(m, TorchCompileWithNoGuardsWrapper)
            and not getattr(m, "do_not_compile", True)]


def hooks_traced(model: Any, vllm_config: Any) -> bool:
    """True when forward hooks on `model`'s sub-modules would be traced once, not run."""
    mode = compile_mode(vllm_config)
    if mode == 0:
        return False
    if mode == STOCK_TORCH_COMPILE:
        return True  # the model runner may torch.compile the model from outside: assume so
    return bool(compiled_modules(model))
