"""/metrics pages in vLLM 0.33.0's format are read as `vllm bench serve` reads them (summed
over engines, `_created` samples ignored), and the reference server writes that format."""

from __future__ import annotations

from mtpsim.client.prometheus import parse_spec_decode, render_spec_decode
from mtpsim.metrics import SpecDecodeCounters

VLLM_PAGE = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="nvidia/DeepSeek-V3.2-NVFP4"} 100.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="nvidia/DeepSeek-V3.2-NVFP4"} 20.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="nvidia/DeepSeek-V3.2-NVFP4"} 1.7e9
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 360.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 219.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 105.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 42.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 72.0
vllm:num_requests_running{engine="0",model_name="m"} 3.0
"""


def test_a_vllm_page_sums_engines_and_orders_positions():
    c = parse_spec_decode(VLLM_PAGE)
    assert c == SpecDecodeCounters(120, 360, 219, [105, 72, 42])


def test_a_page_without_speculation_reads_as_none():
    assert parse_spec_decode('vllm:num_requests_running{engine="0"} 3.0\n') is None


def test_rendered_counters_read_back_and_deltas_follow_vllm():
    before = SpecDecodeCounters(10, 30, 20, [9, 7, 4])
    after = SpecDecodeCounters(25, 75, 44, [19, 15, 10])
    page = render_spec_decode(after, {"engine": "0", "model_name": "x"})
    assert "# TYPE vllm:spec_decode_num_drafts_total counter" in page
    d = parse_spec_decode(page).delta(before)
    assert d == SpecDecodeCounters(15, 45, 24, [10, 8, 6])
    assert d.to_bench_keys()["spec_decode_acceptance_length"] == 1 + 24 / 15


def test_label_values_with_quotes_and_braces_round_trip():
    """prometheus_client writes and reads the exposition: a model name holding `"`, `}` or a
    newline (a regular expression over the lines cut it at the brace) keeps every counter."""
    c = SpecDecodeCounters(7, 21, 12, [6, 4, 2])
    for model in ('a"b', "x}y{z", "line\nbreak", "back\\slash"):
        page = render_spec_decode(c, {"engine": "0", "model_name": model})
        assert parse_spec_decode(page) == c, page
