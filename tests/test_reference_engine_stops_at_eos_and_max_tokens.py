"""Requests end at EOS (byte 0, included in the output) unless ignore_eos, else at max_tokens;
bad requests are refused with a ValueError before they touch the engine."""

from __future__ import annotations

import pytest
from _reference_models import prompts, tiny_model

from mtpsim.engine.corpus import EOS
from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine


def serve(ignore_eos: bool):
    engine = SpecDecodeEngine(tiny_model(vocab=4), EngineConfig(
        num_speculative_tokens=3, index_topk=4, max_num_seqs=8, max_model_len=64))
    for i, p in enumerate(prompts(4, (5,) * 40, seed=9)):
        engine.add_request(f"r{i}", p, 12, temperature=1.0, ignore_eos=ignore_eos, seed=i)
    outs: dict[str, list[int]] = {}
    reasons = {}
    while engine.has_unfinished():
        for o in engine.step():
            outs.setdefault(o.request_id, []).extend(o.new_token_ids)
            if o.finished:
                reasons[o.request_id] = o.finish_reason
    return outs, reasons


def test_eos_ends_a_request_unless_ignored():
    outs, reasons = serve(ignore_eos=False)
    stopped = [r for r in outs if reasons[r] == "stop"]
    assert stopped and len(stopped) < len(outs)
    for r, toks in outs.items():
        if reasons[r] == "stop":
            assert toks[-1] == EOS and EOS not in toks[:-1] and len(toks) <= 12
        else:
            assert reasons[r] == "length" and len(toks) == 12 and EOS not in toks
    outs, reasons = serve(ignore_eos=True)
    assert all(len(t) == 12 and reasons[r] == "length" for r, t in outs.items())
    assert any(EOS in t for t in outs.values())


@pytest.mark.parametrize("kwargs", [
    {"prompt_tokens": []}, {"prompt_tokens": [1, 99]}, {"max_tokens": 0},
    {"temperature": -1.0}, {"max_tokens": 100},
])
def test_bad_requests_are_refused(kwargs):
    engine = SpecDecodeEngine(tiny_model(vocab=16), EngineConfig(max_model_len=64))
    args = {"request_id": "a", "prompt_tokens": [1, 2], "max_tokens": 4} | kwargs
    with pytest.raises(ValueError):
        engine.add_request(**args)
    assert not engine.has_unfinished()
