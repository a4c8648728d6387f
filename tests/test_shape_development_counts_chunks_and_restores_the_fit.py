"""benchmarks/shape_development.py (post-hoc development, docs/uncertainty.md §15): its prompt-chunk
arithmetic matches the engine's chunked prefill, and its candidates leave the fit as they found it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import shape_development as sd  # noqa: E402

import mtpsim.calibration.fit as fit  # noqa: E402
import mtpsim.models.cost as cost  # noqa: E402
import mtpsim.models.fitted as fitted  # noqa: E402


def test_a_prompt_is_scored_chunk_by_chunk_up_to_each_chunks_end():
    # 600 tokens at top-64 (chunks of 16384 // 64 = 256 rows): ends 256, 512, 600
    assert sd.chunk_work(600, 256) == (3, 256 * 256 + 512 * 256 + 600 * 88)
    assert sd.chunk_work(256, 256) == (1, 256 * 256)
    # more than the causal pairs P(P+1)/2: each chunk pads its rows to the chunk's end
    calls, pairs = sd.chunk_work(1700, 256)
    assert calls == 7 and pairs > 1700 * 1701 // 2


@pytest.mark.parametrize("name", ["padded_indexer", "prompt_chunks", "decode_scope"])
def test_every_candidate_restores_the_fit_and_the_pricing(name):
    before = (fit.step_quantities, fit.cost_features, cost.cost_features, fit._nnls, fit.fit_cost,
              fit.trace_kind, fitted.cost_features)
    with pytest.raises(RuntimeError), sd.candidate(name):
        assert (fit.step_quantities, fit.cost_features, fit._nnls, fit.fit_cost) != before[:2] + before[3:5]
        if name == "prompt_chunks":  # the pricing (FittedCost's own binding) sees the chunks too
            assert fitted.cost_features is sd.chunked_features
        raise RuntimeError("interrupted")
    with sd.grouped({}):
        assert fit.trace_kind is not before[5]
    assert (fit.step_quantities, fit.cost_features, cost.cost_features, fit._nnls, fit.fit_cost,
            fit.trace_kind, fitted.cost_features) == before


def test_an_unknown_candidate_is_refused():
    with pytest.raises(ValueError), sd.candidate("free_term"):
        pass
