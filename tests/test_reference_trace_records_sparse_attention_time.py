"""The reference engine's trace records, per phase, the seconds of its top-k-wide sparse
attention (what the calibration prices per attended key), and the prefill chunk keeps the
gathered block the same size at every top-k."""

from __future__ import annotations

from _reference_models import prompts, run, tiny_model

from mtpsim.engine.engine import PREFILL_ROW_KEYS, EngineConfig, SpecDecodeEngine

ATTENDING = {"prefill", "verify", "draft_prefill", "draft_decode_rest"}


def test_attention_seconds_lie_within_the_phases_that_attend():
    model = tiny_model()
    _, engine = run(model, prompts(16, (20, 33, 9)), "share", k=3, max_tokens=12)
    seen = set()
    for st in engine.trace.steps:
        assert set(st.attention) <= ATTENDING
        for phase, seconds in st.attention.items():
            assert 0 < seconds <= st.phases[phase] + 1e-9, (st.step, phase)
        seen |= set(st.attention)
    assert seen == ATTENDING


def test_no_attention_clock_without_a_trace():
    model = tiny_model()
    engine = SpecDecodeEngine(model, EngineConfig(2, 4, max_num_seqs=2, max_model_len=64,
                                                  policy="fresh", trace=False))
    run(model, prompts(16, (12,)), "fresh", k=2, max_tokens=6, engine=engine)
    assert engine.timer.attention_s == 0.0 and not engine.trace.steps


def test_prefill_chunk_holds_rows_times_topk_constant():
    model = tiny_model()
    for topk in (4, 32, 64, 128):
        eng = SpecDecodeEngine(model, EngineConfig(2, topk, max_model_len=64, policy="fresh"))
        assert eng.prefill_chunk == PREFILL_ROW_KEYS // topk
    eng = SpecDecodeEngine(model, EngineConfig(2, 64, max_model_len=64, prefill_chunk=8))
    assert eng.prefill_chunk == 8  # an explicit chunk wins
