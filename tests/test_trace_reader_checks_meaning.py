"""A trace is read for what it means, not only its JSON types: counts consistent with k,
accepted drafts a prefix of the drafted ones, overlaps fractions, times finite, sizes and
nesting bounded, the policy a known name. Each bad trace is one TraceError line."""

from __future__ import annotations

import json

import pytest

from mtpsim.errors import TraceError
from mtpsim.result import PHASES
from mtpsim.trace import FORMAT, VERSION, read_trace

HEAD = {"format": FORMAT, "version": VERSION, "engine": "reference", "policy": "share",
        "num_speculative_tokens": 3, "index_topk": 64, "meta": {}}
REQ = {"id": "r0", "context_len": 100, "drafted": 3, "accepted": [1, 1, 0], "overlap": [0.9, 0.8]}
STEP = {"step": 0, "time_s": 0.5, "num_reqs": 1, "num_prefills": 0,
        "phases": dict.fromkeys(PHASES, 0.001), "shadow_s": 0.0, "mtp_indexer_calls": [1, 0, 0],
        "requests": [REQ]}


def _write(tmp_path, head=HEAD, steps=(STEP,), raw: str | None = None):
    p = tmp_path / "t.trace.jsonl"
    text = raw if raw is not None else "\n".join(json.dumps(x) for x in [head, *steps])
    p.write_text(text + "\n")
    return p


def test_the_valid_trace_reads(tmp_path):
    tr = read_trace(_write(tmp_path))
    assert tr.accepted_per_pos() == [1, 1, 0] and tr.mean_overlap() == [0.9, 0.8]


def _req(**kw):
    return {**STEP, "requests": [{**REQ, **kw}]}


@pytest.mark.parametrize("head, steps, needle", [
    ({**HEAD, "num_speculative_tokens": 0}, [STEP], "num_speculative_tokens"),
    ({**HEAD, "num_speculative_tokens": 1000}, [STEP], "num_speculative_tokens"),
    ({**HEAD, "index_topk": 0}, [STEP], "index_topk"),
    ({**HEAD, "policy": "../../x"}, [STEP], "policy"),
    ({**HEAD, "meta": [1, 2]}, [STEP], "meta"),
    ({**HEAD, "meta": 7}, [STEP], "meta"),
    (HEAD, [_req(accepted=[1, 1, 1, 1], drafted=4)], "drafted"),  # more drafts than k
    (HEAD, [_req(accepted=[1, 1, 1, 1])], "accepted"),  # more accepted than drafted
    (HEAD, [_req(accepted=[1, 2, 0])], "accepted"),
    (HEAD, [_req(accepted=[0, 1, 0])], "accepted"),  # not a prefix of ones
    (HEAD, [_req(accepted=[1, 1])], "accepted"),  # wrong length for drafted
    (HEAD, [_req(context_len=0)], "context_len"),
    (HEAD, [_req(context_len=-5)], "context_len"),
    (HEAD, [_req(overlap=[1.5, 0.2])], "overlap"),
    (HEAD, [_req(overlap=[-0.1, 0.2])], "overlap"),
    (HEAD, [_req(overlap=[0.5, 0.5, 0.5])], "overlap"),  # k - 1 = 2 steps at most
    (HEAD, [_req(id=3)], "id"),
    (HEAD, [{**STEP, "num_reqs": 4}], "num_reqs"),
    (HEAD, [{**STEP, "mtp_indexer_calls": [1, 0]}], "mtp_indexer_calls"),
    (HEAD, [{**STEP, "mtp_indexer_calls": [1, -1, 0]}], "mtp_indexer_calls"),
    (HEAD, [{**STEP, "time_s": -1.0}], "time_s"),
    (HEAD, [{**STEP, "shadow_s": "0"}], "shadow_s"),
    (HEAD, [{**STEP, "phases": {**STEP["phases"], "verify": -0.5}}], "phases.verify"),
    (HEAD, [{**STEP, "step": -1}], "step"),
    (HEAD, [{**STEP, "requests": [3]}], "requests"),
])
def test_impossible_values_are_one_line_errors(tmp_path, head, steps, needle):
    with pytest.raises(TraceError) as e:
        read_trace(_write(tmp_path, head, steps))
    msg = e.value.message()
    assert needle in msg and "t.trace.jsonl" in msg and "\n" not in msg, msg


@pytest.mark.parametrize("raw, needle", [
    (json.dumps(HEAD) + "\n" + json.dumps(STEP).replace('"time_s": 0.5', '"time_s": Infinity'),
     "finite"),
    (json.dumps(HEAD) + "\n" + json.dumps(STEP).replace('"time_s": 0.5', '"time_s": NaN'), "finite"),
    (json.dumps(HEAD) + "\n" + json.dumps(STEP).replace('"time_s": 0.5', '"time_s": 1e999'),
     "finite"),
    (json.dumps(HEAD) + "\n" + json.dumps(STEP).replace('"step": 0', '"step": ' + "9" * 5000),
     "finite"),
    (json.dumps(HEAD) + "\n" + "[" * 100_000 + "]" * 100_000, "nested"),
    (json.dumps(HEAD) + "\n" + json.dumps({**STEP, "x": "[" * 40 + "1" + "]" * 40})
     .replace('"[', "[").replace(']"', "]"), "nested"),  # 41 deep: parses, but past the bound
])
def test_non_finite_numbers_and_deep_nesting_are_refused(tmp_path, raw, needle):
    with pytest.raises(TraceError) as e:
        read_trace(_write(tmp_path, raw=raw))
    msg = e.value.message()
    assert needle in msg and "line 2" in msg and "\n" not in msg, msg
