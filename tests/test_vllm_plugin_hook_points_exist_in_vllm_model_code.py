"""The module attributes the plugin hooks on are what vLLM 0.33.0's DeepSeek-V3.2 MTP code
uses: `set_skip_topk` sets `skip_topk` on `mtp_block.self_attn.mla_attn`, a sparse-MLA
wrapper whose forward runs `self.indexer(hidden_states, ...)` only when `skip_topk` is off,
and whose indexer writes the `topk_indices_buffer` that compaction gathers. Read from the
installed source (building the real modules needs a GPU platform); a model without such a
layer reads as "sharing engaged: unknown"."""

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
