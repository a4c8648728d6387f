"""An integer past 64 bits in a spec, a result or a trace was refused as "FILE: expected
integers of at most 19 digits", naming no field: in a result of 40 fields, or a trace of a
thousand lines, the user had to hunt for it. The line now names the field (its key path)."""

from __future__ import annotations

import json

import pytest
from _cli import one_error_line

from mtpsim.errors import ResultError, TraceError
from mtpsim.inputs import check_nesting, loads_json


def test_a_spec_names_the_field(tmp_path):
    spec = tmp_path / "huge.toml"
    spec.write_text("seed = 99999999999999999999\n")
    assert one_error_line("simulate", str(spec)) == (
        f"error: {spec}: seed: expected an integer of at most 19 digits, got 20 digits")
    spec.write_text('[workload]\nnum_prompts = 4\ninput_len = -99999999999999999999\n')
    assert one_error_line("simulate", str(spec)).startswith(
        f"error: {spec}: workload.input_len: expected an integer of at most 19 digits")


def test_a_result_and_a_trace_line_name_the_field():
    with pytest.raises(ResultError, match=r"^r\.json: completed: expected an integer of at most 19 "
                       r"digits, got 401 digits$"):
        loads_json(json.dumps({"policy": "fresh", "completed": 10**400}), "r.json", ResultError)
    with pytest.raises(TraceError, match=r"^t\.jsonl: line 3: requests\[1\]\.context_len: expected "
                       r"an integer of at most 19 digits"):
        loads_json(json.dumps({"requests": [{"context_len": 1}, {"context_len": 2**64}]}),
                   "t.jsonl", TraceError, "line 3")
    with pytest.raises(ResultError, match=r"^r\.json: extra\.x: expected a finite number, got inf$"):
        check_nesting({"extra": {"x": float("inf")}}, "r.json", ResultError)
    check_nesting({"a": [2**63, -2**63]}, "ok.json", ResultError)  # 19 digits still read
