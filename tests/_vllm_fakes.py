"""Fakes for driving vLLM 0.33.0's real MTPSpeculator hooks on CPU (as vLLM's own tests do:
speculators built with `object.__new__`, models that record what ran)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import torch

TOP_K = 8


def _window(positions: torch.Tensor, salt: int) -> torch.Tensor:
    """Rows of top-k positions [pos - TOP_K + 1, pos] (+ salt): the fake's selection."""
    return positions.to(torch.int32).unsqueeze(1) - torch.arange(TOP_K, dtype=torch.int32) + salt


class FakeIndexer(torch.nn.Module):
    """An indexer with a `wq_b` sub-module, writing one top-k row per query token."""

    def __init__(self, max_tokens: int) -> None:
        super().__init__()
        self.wq_b = torch.nn.Identity()
        self.topk_indices_buffer = torch.full((max_tokens, TOP_K), -1, dtype=torch.int32)
        self.salt = 0
        self.calls = 0

    def forward(self, hidden_states: torch.Tensor, positions: torch.Tensor) -> None:
        self.calls += 1
        self.wq_b(hidden_states)
        n = hidden_states.shape[0]
        self.topk_indices_buffer[:n] = _window(positions[:n], self.salt)


class FakeSparseMLA(torch.nn.Module):
    """vLLM's generic MultiHeadLatentAttentionWrapper: `self.indexer(...)` unless skip_topk."""

    def __init__(self, max_tokens: int) -> None:
        super().__init__()
        self.skip_topk = False
        self.indexer = FakeIndexer(max_tokens)
        self.topk_indices_buffer = self.indexer.topk_indices_buffer
        self.used_rows: list[torch.Tensor] = []

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        if self.indexer is not None and not self.skip_topk:
            self.indexer(hidden_states, positions)
        self.used_rows.append(self.topk_indices_buffer[: hidden_states.shape[0]].clone())
        return hidden_states


class FakeFusedDSA(FakeSparseMLA):
    """vLLM's CUDA DeepseekV32Attention: uses the indexer's sub-modules and a fused op that
    writes the rows and attends in one go; `Indexer.forward` never runs."""

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        n = hidden_states.shape[0]
        if self.indexer is not None and not self.skip_topk:
            self.indexer.wq_b(hidden_states)
            self.indexer.calls += 1
            self.topk_indices_buffer[:n] = _window(positions[:n], self.indexer.salt)
        self.used_rows.append(self.topk_indices_buffer[:n].clone())
        return hidden_states


ATTENTIONS = {"generic": FakeSparseMLA, "cuda-fused": FakeFusedDSA}


class FakeMTPInner(torch.nn.Module):
    """`draft_model.model`: DeepSeekMultiTokenPredictor's set_skip_topk/compact_topk_indices."""

    def __init__(self, max_tokens: int, broken_compaction: bool = False,
                 attention: str = "generic") -> None:
        super().__init__()
        self.attn = ATTENTIONS[attention](max_tokens)
        self.broken_compaction = broken_compaction

    def set_skip_topk(self, skip: bool) -> None:
        self.attn.skip_topk = skip

    def compact_topk_indices(self, slot_ids: torch.Tensor) -> None:
        buf = self.attn.topk_indices_buffer
        n = slot_ids.numel()
        if self.broken_compaction:  # the upstream bug: rows are not gathered per request
            return
        buf[:n] = buf[slot_ids]


class FakeDraftModel(torch.nn.Module):
    def __init__(self, max_tokens: int = 64, broken_compaction: bool = False,
                 attention: str = "generic") -> None:
        super().__init__()
        self.model = FakeMTPInner(max_tokens, broken_compaction, attention)

    def forward(self, hidden_states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if isinstance(self.model.attn, FakeFusedDSA):  # vLLM's CUDA layer calls by keyword
            return self.model.attn(positions=positions, hidden_states=hidden_states)
        return self.model.attn(positions, hidden_states)


def make_speculator(mtp_cls: type, *, k: int = 3, hf_share: bool = False,
                    eager: bool = True, compile_mode: int = 0) -> Any:
    spec = object.__new__(mtp_cls)
    spec.vllm_config = SimpleNamespace(
        parallel_config=SimpleNamespace(prefill_context_parallel_size=1),
        model_config=SimpleNamespace(enforce_eager=eager),
        compilation_config=SimpleNamespace(mode=compile_mode),
        speculative_config=SimpleNamespace(draft_model_config=SimpleNamespace(
            hf_config=SimpleNamespace(index_share_for_mtp_iteration=hf_share))),
    )
    spec.num_speculative_steps = k
    spec.current_draft_step = torch.tensor(0, dtype=torch.int64)  # as vLLM's, a device scalar
    return spec


def load(spec: Any, monkeypatch: pytest.MonkeyPatch, draft: FakeDraftModel) -> FakeDraftModel:
    """Run the (wrapped) real load_draft_model with vLLM's loader replaced by `draft`."""
    import vllm.v1.worker.gpu.spec_decode.mtp.speculator as mtp_mod

    monkeypatch.setattr(mtp_mod, "load_eagle_model", lambda target, cfg: draft)
    spec.model = spec.load_draft_model(torch.nn.Identity(), set())
    return draft


def propose(spec: Any, draft: FakeDraftModel, positions: list[int], *,
            salt_per_step: int = 0, num_tokens: int | None = None, drafts: bool = True) -> None:
    """One draft round as TargetDependentARSpeculator.propose drives it: step 0 over each
    request's k+1 verified slots (or `num_tokens` prefill-chunk tokens), then k-1 one-token
    steps. positions: each request's last accepted position. `drafts=False`: a step the
    scheduler marked skip_drafts (num_speculative_tokens 0): propose runs step 0 and returns
    before `on_multi_step_decode_begin` (target_dependent_ar/speculator.py, `propose`)."""
    k = spec.num_speculative_steps
    n = len(positions)
    pos0 = torch.tensor([p - k + j for p in positions for j in range(k + 1)])  # [n * (k + 1)]
    spec.last_token_indices = torch.tensor([i * (k + 1) + k for i in range(n)])  # [n]
    indexer = draft.model.attn.indexer
    indexer.salt = 0
    if num_tokens is not None:
        pos0 = torch.arange(num_tokens)
    spec.current_draft_step.fill_(0)  # _prepare_prefill_inputs_kernel stores 0
    spec.on_prefill_begin(n)
    draft(torch.zeros(pos0.numel(), 4), pos0)
    spec.on_prefill_end(n)
    if not drafts:
        return
    spec.on_multi_step_decode_begin(n)
    for s in range(1, k):
        indexer.salt = s * salt_per_step
        spec.current_draft_step.fill_(s)  # _multi_step_decode, before each step
        draft(torch.zeros(n, 4), torch.tensor(positions) + s)
    spec.on_multi_step_decode_end(n)


@contextlib.contextmanager
def installed(settings: Any) -> Iterator[Any]:
    from mtpsim.vllm_plugin.patch import install, uninstall

    try:
        yield install(settings)
    finally:
        uninstall()
