"""The smoke judges each draft step on its own, on count sequences recorded by the plugin
around vLLM 0.33.0's real MTPSpeculator hooks, driven in the step shapes Model Runner V2
produces: uniform decode rounds; a last step whose requests all finish (the scheduler sets
skip_drafts, `propose` runs step 0 and returns: counts [R + z, R, R]); steps where every
request is mid-chunk (the same, with prefill-chunk tokens). Each passes for the policy it was
recorded under and fails for the other; the old per-round average failed the zero-draft one."""

from __future__ import annotations

import pytest
from _vllm_fakes import FakeDraftModel, installed, load, make_speculator, propose

from mtpsim.vllm_plugin.settings import PluginSettings
from mtpsim.vllm_runner.smoke import judge_steps

MTPSpeculator = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator").MTPSpeculator

K = 3
# (drafts?, prefill-chunk tokens or None) per engine step.
ROUND, LAST, CHUNK = (True, None), (False, None), (False, 48)
SHAPES = {
    "uniform": [ROUND] * 5,
    "zero-draft last step": [ROUND] * 5 + [LAST],
    "mid-chunk": [CHUNK, CHUNK, ROUND, ROUND, CHUNK, ROUND, ROUND, LAST],
}


def _record(policy: str, shape: list[tuple[bool, int | None]], tmp_path, monkeypatch,
            attention: str) -> tuple[list[int], list[int]]:
    with installed(PluginSettings(policy, tmp_path)) as rec:
        spec = make_speculator(MTPSpeculator, k=K)
        draft = load(spec, monkeypatch, FakeDraftModel(attention=attention))
        for drafts, chunk in shape:
            propose(spec, draft, [40, 90], num_tokens=chunk, drafts=drafts)
    steps = rec.counts.contexts["propose"]
    return steps.forwards, steps.indexer


@pytest.mark.parametrize("attention", ["generic", "cuda-fused"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("policy", ["fresh", "share"])
def test_recorded_counts_pass_for_their_policy_and_fail_for_the_other(policy, shape, attention,
                                                                      tmp_path, monkeypatch):
    fwd, idx = _record(policy, SHAPES[shape], tmp_path, monkeypatch, attention)
    rounds = sum(d for d, _ in SHAPES[shape])
    zero = len(SHAPES[shape]) - rounds
    assert fwd == [rounds + zero, rounds, rounds]
    assert idx == (fwd if policy == "fresh" else [rounds + zero, 0, 0])
    ok, detail = judge_steps(policy, fwd, idx, K)
    assert ok, detail
    assert f"{zero} step-0 forward(s) without drafts" in detail
    other = "share" if policy == "fresh" else "fresh"
    ok, detail = judge_steps(other, fwd, idx, K)
    assert not ok
    assert "wrong at step 1, 2" in detail


def test_the_old_per_round_average_failed_a_run_with_a_zero_draft_step(tmp_path, monkeypatch):
    fwd, idx = _record("fresh", SHAPES["zero-draft last step"], tmp_path, monkeypatch, "generic")
    assert sum(idx) / fwd[0] != K  # what `per_round == k` judged: 16 / 6
    assert judge_steps("fresh", fwd, idx, K)[0]


@pytest.mark.parametrize(("policy", "fwd", "idx", "why"), [
    ("fresh", [6, 6], [6, 6], "2 step(s) recorded, expected 3"),
    ("share", [6, 0, 0], [6, 0, 0], "no draft round was seen"),
    ("fresh", [], [], "expected 3"),
    ("share", [5, 6, 6], [5, 0, 0], "more forwards at a later step"),
    ("share", [7, 6, 6], [6, 0, 0], "wrong at step 0"),
    ("fresh", [7, 6, 6], [7, 6, 5], "wrong at step 2"),
    ("share", [7, 6, 6], [7, 1, 0], "wrong at step 1"),
])
def test_broken_sequences_fail_with_the_reason(policy, fwd, idx, why):
    ok, detail = judge_steps(policy, fwd, idx, K)
    assert not ok
    assert why in detail
