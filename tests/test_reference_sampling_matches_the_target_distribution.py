"""With temperature > 0, speculative sampling leaves the output distribution the target's own:
a chi-square test of tokens 2-3 (produced by draft + verify + rejection) against the exact
target probabilities, on a vocabulary of 8."""

from __future__ import annotations

import itertools

import pytest
import torch
from _reference_models import run, tiny_model
from scipy.stats import chisquare

VOCAB, PROMPT, N, TEMP = 8, [1, 2, 3], 3000, 1.0


def exact_joint_of_tokens_2_and_3(model) -> dict[tuple[int, int], float]:
    """P(t2, t3) = sum_t1 P(t1) P(t2 | t1) P(t3 | t1, t2), from full target forwards."""
    model.setup_caches(1, 16, 8)
    slot = torch.tensor([0])

    def probs(seq: list[int]) -> torch.Tensor:
        logits, _ = model(torch.tensor([seq]), torch.arange(len(seq))[None], slot, 8)
        return torch.softmax(logits[0, -1] / TEMP, -1)

    p1 = probs(PROMPT)
    joint: dict[tuple[int, int], float] = dict.fromkeys(itertools.product(range(VOCAB), repeat=2), 0.0)
    for t1 in range(VOCAB):
        p2 = probs(PROMPT + [t1])
        for t2 in range(VOCAB):
            p3 = probs(PROMPT + [t1, t2])
            for t3 in range(VOCAB):
                joint[(t2, t3)] += float(p1[t1] * p2[t2] * p3[t3])
    return joint


@pytest.mark.slow
def test_tokens_drawn_through_rejection_sampling_follow_the_target():
    model = tiny_model(vocab=VOCAB, seed=5)
    with torch.inference_mode():
        expected = exact_joint_of_tokens_2_and_3(model)
    outs, engine = run(model, [PROMPT] * N, "share", k=2, topk=8, max_tokens=3, temperature=TEMP,
                       max_num_seqs=500, seeds=list(range(N)))
    s = engine.stats
    assert 0.1 < s.num_accepted_tokens / s.num_draft_tokens < 0.95  # drafts matter, both ways
    counts = dict.fromkeys(expected, 0)
    for toks in outs.values():
        counts[(toks[1], toks[2])] += 1
    # pool the cells too rare for the chi-square approximation
    big = [c for c in expected if expected[c] * N >= 5]
    obs = [counts[c] for c in big] + [N - sum(counts[c] for c in big)]
    exp = [expected[c] * N for c in big]
    exp.append(N - sum(exp))
    assert chisquare(obs, exp).pvalue > 1e-3


def test_the_test_has_power_drafts_alone_are_rejected():
    """The draft distribution itself is far from the target's, so a sampler that accepted every
    draft would fail the test above."""
    model = tiny_model(vocab=VOCAB, seed=5)
    with torch.inference_mode():
        model.setup_caches(1, 16, 8)
        pos = torch.arange(len(PROMPT))[None]
        logits, h = model(torch.tensor([PROMPT]), pos, torch.tensor([0]), 8)
        p_target = torch.softmax(logits[0, -1], -1)
        t1 = int(p_target.argmax())
        tok = torch.tensor([PROMPT[1:] + [t1]])
        d_logits, _ = model.draft(tok, h, pos, torch.tensor([0]), 8)
        q = torch.softmax(d_logits[0, -1], -1)  # draft for token 2 given t1
        logits2, _ = model(torch.tensor([[t1]]), torch.tensor([[len(PROMPT)]]), torch.tensor([0]), 8)
        p2 = torch.softmax(logits2[0, -1], -1)
    assert float((q - p2).abs().sum()) > 0.2
