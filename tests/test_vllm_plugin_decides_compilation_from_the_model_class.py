"""Compilation mode > 0 compiles only `@support_torch_compile` classes. vLLM 0.33.0's CUDA
DeepSeek-V3.2 MTP model has no such decorator, so under `-O3` the plugin's hooks still run and
the verdict comes from the counts ("unknown" only when the draft model really is compiled)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
import torch
from _vllm_fakes import FakeDraftModel, installed, load, make_speculator, propose

from mtpsim.vllm_plugin.compiled import compiled_modules, hooks_traced
from mtpsim.vllm_plugin.counts import sharing_verdict
from mtpsim.vllm_plugin.settings import PluginSettings

MTPSpeculator = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator").MTPSpeculator


pytestmark = pytest.mark.usefixtures("cpu_platform")


def _decorated_classes(module: str) -> dict[str, bool]:
    """class name -> carries @support_torch_compile, read from the installed source."""
    path = Path(importlib.util.find_spec(module).origin)
    out = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            names = {ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in
                     node.decorator_list}
            out[node.name] = "support_torch_compile" in names
    return out


@pytest.mark.parametrize("module", ["vllm.models.deepseek_v32.nvidia.mtp",
                                    "vllm.models.deepseek_v32.amd.mtp"])
def test_the_installed_deepseek_v32_mtp_classes_are_not_compiled(module):
    classes = _decorated_classes(module)
    assert "DeepseekV32MTP" in classes
    assert not any(classes.values()), classes


def test_the_generic_mtp_class_is_compiled_so_the_distinction_is_real():
    assert _decorated_classes("vllm.model_executor.models.deepseek_mtp")["DeepSeekMTP"] is True


def _compiled_part(mode: int) -> torch.nn.Module:
    from vllm.compilation.decorators import support_torch_compile
    from vllm.config import CompilationConfig, VllmConfig, set_current_vllm_config

    @support_torch_compile(dynamic_arg_dims={"x": 0})
    class Compiled(torch.nn.Module):
        def __init__(self, *, vllm_config, prefix: str = "") -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(x)

    cfg = VllmConfig(compilation_config=CompilationConfig(mode=mode))
    with set_current_vllm_config(cfg):
        return Compiled(vllm_config=cfg)


def _config(mode: int):
    from types import SimpleNamespace

    return SimpleNamespace(compilation_config=SimpleNamespace(mode=mode))


def test_a_support_torch_compile_module_is_traced_only_when_vllm_compiles_it():
    draft = FakeDraftModel()
    assert hooks_traced(draft, _config(3)) is False  # like DeepseekV32MTP
    draft.extra = _compiled_part(3)
    assert compiled_modules(draft) == ["extra"]
    assert hooks_traced(draft, _config(3)) is True
    assert hooks_traced(draft, _config(0)) is False
    off = FakeDraftModel()
    off.extra = _compiled_part(0)  # decorated, but vLLM set do_not_compile
    assert compiled_modules(off) == []


def test_under_o3_an_uncompiled_mtp_model_is_counted_not_unknown(tmp_path, monkeypatch):
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=3, compile_mode=3)
        draft = load(spec, monkeypatch, FakeDraftModel())
        propose(spec, draft, [40])
    assert rec.counts.hooks_traced is False and rec.counts.compile_mode == 3
    assert rec.counts.contexts["propose"].indexer == [1, 0, 0]
    verdict = sharing_verdict(rec.counts)
    assert verdict.engaged is True
    assert verdict.line().endswith("counts from served traffic)")


def test_a_compiled_draft_model_is_not_hooked_and_the_verdict_says_why(tmp_path, monkeypatch):
    draft = FakeDraftModel()
    draft.extra = _compiled_part(3)
    with installed(PluginSettings("share", tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=3, compile_mode=3)
        load(spec, monkeypatch, draft)
        propose(spec, draft, [40])
    assert spec.share_mtp_topk_indices is True  # the policy still applies
    assert rec.counts.contexts["propose"].forwards == []
    verdict = sharing_verdict(rec.counts)
    assert verdict.engaged is None
    assert "torch.compile mode 3 compiles the draft model" in verdict.line()


def test_trace_mode_refuses_a_compiled_draft_model(tmp_path, monkeypatch):
    from mtpsim.vllm_plugin.settings import PluginConfigError

    draft = FakeDraftModel()
    draft.extra = _compiled_part(3)
    with installed(PluginSettings("share", tmp_path, trace=True)):
        spec = make_speculator(MTPSpeculator, compile_mode=3)
        with pytest.raises(PluginConfigError, match="compilation mode 0"):
            load(spec, monkeypatch, draft)
