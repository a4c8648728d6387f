"""The module attributes the plugin hooks on are what vLLM 0.33.0's DeepSeek-V3.2 MTP code
uses, in both of its shapes: the generic one (`set_skip_topk` reaches a
MultiHeadLatentAttentionWrapper that calls `self.indexer(...)` only when `skip_topk` is off)
and the CUDA one (`DeepseekV32Attention` calls the indexer's `wq_b`/`wk_weights_proj` only when
`skip_topk` is off); both hold the `topk_indices_buffer` that compaction gathers. Read from
the installed source (building the real modules needs a GPU platform); a model without such
a layer reads as "sharing engaged: unknown"."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

mla = pytest.importorskip("vllm.model_executor.layers.mla")
dsv2 = pytest.importorskip("vllm.model_executor.models.deepseek_v2")
dmtp = pytest.importorskip("vllm.model_executor.models.deepseek_mtp")

from mtpsim.vllm_plugin.counts import PluginCounts, sharing_verdict  # noqa: E402


def _tree(fn) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(fn)))


def test_set_skip_topk_targets_the_sparse_mla_wrapper():
    src = ast.unparse(_tree(dmtp.DeepSeekMultiTokenPredictor.set_skip_topk))
    assert 'getattr(mtp_block, "self_attn"' in src.replace("'", '"')
    assert 'getattr(self_attn, "mla_attn"' in src.replace("'", '"')
    assert "mla_attn.skip_topk = skip" in src


def test_the_wrapper_runs_its_indexer_only_when_skip_topk_is_off():
    tree = _tree(mla.MultiHeadLatentAttentionWrapper.forward)
    guarded = [n for n in ast.walk(tree) if isinstance(n, ast.If)
               and "not self.skip_topk" in ast.unparse(n.test)
               and "self.indexer" in ast.unparse(n.test)]
    assert len(guarded) == 1
    (call,) = [n for n in ast.walk(guarded[0]) if isinstance(n, ast.Call)
               and ast.unparse(n.func) == "self.indexer"]
    assert ast.unparse(call.args[0]) == "hidden_states"  # the plugin reads num_tokens from it
    init = ast.unparse(_tree(mla.MultiHeadLatentAttentionWrapper.__init__))
    assert "self.skip_topk = skip_topk" in init and "self.indexer = " in init


def test_the_indexer_writes_the_buffer_that_compaction_gathers():
    init = ast.unparse(_tree(dsv2.Indexer.__init__))
    assert "self.topk_indices_buffer = topk_indices_buffer" in init
    assert list(inspect.signature(dsv2.Indexer.forward).parameters)[:2] == ["self",
                                                                          "hidden_states"]
    compact = ast.unparse(_tree(dmtp.DeepSeekMultiTokenPredictor.compact_topk_indices))
    assert "topk_indices_buffer[:num_slots] = topk_indices_buffer[slot_ids]" in compact


def test_a_draft_model_without_such_a_layer_reads_as_unknown():
    verdict = sharing_verdict(PluginCounts(policy="share", hooked_layers=0))
    assert verdict.engaged is None and "not a DSA model" in verdict.line()


# On CUDA, vLLM 0.33.0 serves DeepSeek-V3.2 through vllm.models.deepseek_v32.nvidia instead.
v32_attn = pytest.importorskip("vllm.models.deepseek_v32.attention")
v32_mtp = pytest.importorskip("vllm.models.deepseek_v32.nvidia.mtp")


def test_the_cuda_mtp_toggles_skip_topk_on_its_attention_module():
    src = ast.unparse(_tree(v32_mtp.DeepseekV32MultiTokenPredictor.set_skip_topk))
    assert 'getattr(layer.mtp_block, "self_attn"' in src.replace("'", '"')
    assert "self_attn.skip_topk = skip" in src
    compact = ast.unparse(_tree(v32_mtp.DeepseekV32MultiTokenPredictor.compact_topk_indices))
    assert "topk_indices_buffer = self_attn.topk_indices_buffer" in compact


def test_the_cuda_attention_runs_indexer_submodules_only_when_skip_topk_is_off():
    A = v32_attn.DeepseekV32Attention
    init = ast.unparse(_tree(A.__init__))
    for line in ("self.indexer = indexer", "self.topk_indices_buffer = topk_indices_buffer",
                 "self.skip_topk = False"):
        assert line in init
    assert list(inspect.signature(A.forward).parameters)[:3] == ["self", "positions",
                                                                 "hidden_states"]
    tree = _tree(A.forward)
    guarded = [n for n in ast.walk(tree) if isinstance(n, ast.If)
               and ast.unparse(n.test) == "self.indexer is not None and (not self.skip_topk)"]
    calls = {ast.unparse(c.func) for g in guarded for c in ast.walk(g)
             if isinstance(c, ast.Call)}
    assert {"self.indexer.wk_weights_proj", "self.indexer.wq_b"} <= calls
    indexer_init = ast.unparse(_tree(v32_attn.DeepseekV32Indexer.__init__))
    assert "self.wq_b = " in indexer_init and "self.wk_weights_proj = " in indexer_init


def test_both_attention_shapes_take_positions_first():
    # The shadow forward in trace mode reads the token count from the first argument.
    params = list(inspect.signature(mla.MultiHeadLatentAttentionWrapper.forward).parameters)
    assert params[:3] == ["self", "positions", "hidden_states"]
