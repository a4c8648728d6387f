"""A trace written by the engine reads back equal; a bad trace file is one TraceError line."""

from __future__ import annotations

import json

import pytest
from _reference_models import prompts, run, tiny_model

from mtpsim.errors import TraceError
from mtpsim.result import PHASES
from mtpsim.trace import FORMAT, VERSION, read_trace


def test_engine_trace_round_trips(tmp_path):
    _, engine = run(tiny_model(), prompts(16, (5, 9)), "share", k=3, max_tokens=12)
    path = tmp_path / "share.trace.jsonl"
    engine.trace.write(path)
    back = read_trace(path)
    assert back == engine.trace
    head = json.loads(path.read_text().splitlines()[0])
    assert head["format"] == FORMAT and head["version"] == VERSION
    assert set(back.steps[0].phases) == set(PHASES)
    assert back.accepted_per_pos() == engine.stats.accepted_per_pos


def _write(tmp_path, lines):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


HEADER = json.dumps({"format": FORMAT, "version": VERSION, "engine": "reference", "policy": "share",
                     "num_speculative_tokens": 3, "index_topk": 4})
STEP = {"step": 0, "time_s": 0.0, "num_reqs": 0, "num_prefills": 1,
        "phases": dict.fromkeys(PHASES, 0.01), "shadow_s": 0.0, "mtp_indexer_calls": [1, 0, 0],
        "requests": []}


def test_a_step_without_attention_seconds_reads_as_none_recorded(tmp_path):
    """Traces written before the field existed (and vLLM's) carry no attention seconds."""
    tr = read_trace(_write(tmp_path, [HEADER, json.dumps(STEP)]))
    assert tr.steps[0].attention == {}


@pytest.mark.parametrize("lines, needle", [
    (["not json"], "line 1"),
    ([json.dumps({"format": "other"})], "header"),
    ([HEADER.replace(f'"version": {VERSION}', '"version": 99')], "version"),
    ([HEADER, json.dumps({"step": 0})], "line 2"),
    ([HEADER, "{"], "line 2"),
    ([HEADER, json.dumps({**STEP, "attention": {"prefill": -1.0}})], "line 2: attention"),
    ([HEADER, json.dumps({**STEP, "attention": {"sampling": 0.1}})], "line 2: attention"),
    ([HEADER, json.dumps({**STEP, "attention": [0.1]})], "line 2: attention"),
])
def test_bad_trace_file_is_a_one_line_error(tmp_path, lines, needle):
    with pytest.raises(TraceError) as e:
        read_trace(_write(tmp_path, lines))
    msg = e.value.message()
    assert needle in msg and "\n" not in msg and "t.jsonl" in msg


def test_missing_trace_file(tmp_path):
    with pytest.raises(TraceError, match="not found"):
        read_trace(tmp_path / "nope.jsonl")
