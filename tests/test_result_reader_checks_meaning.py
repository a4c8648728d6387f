"""A result file is read for what it means: figures finite and non-negative, acceptance figures
that agree with their counters (accepted <= drafted, per-position rates summing to accepted /
drafts), objects where objects belong, request records whose counts and times are possible.
Every bad file is one ResultError line, and no file mtpsim writes is refused by its reader."""

from __future__ import annotations

import json
import math

import pytest
from test_result_files import make_result

from mtpsim.errors import ResultError
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result, load_result


def _good() -> dict:
    return make_result().to_json()


def _rejects(tmp_path, obj, needle: str) -> None:
    p = tmp_path / "r.json"
    p.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    with pytest.raises(ResultError) as e:
        load_result(p)
    msg = e.value.message()
    assert needle in msg and "r.json" in msg and "\n" not in msg, msg


def test_the_valid_file_reads(tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(_good()))
    assert load_result(p).policy == "share"


@pytest.mark.parametrize("change, needle", [
    ({"output_throughput": "fast"}, "output_throughput"),
    ({"output_throughput": -3.0}, "output_throughput"),
    ({"median_tpot_ms": [1.0]}, "median_tpot_ms"),
    ({"completed": 2.5}, "completed"),
    ({"spec_decode_accepted_tokens": 10, "spec_decode_draft_tokens": 6}, "accepted"),
    ({"spec_decode_num_drafts": 9, "spec_decode_draft_tokens": 6}, "spec_decode_draft_tokens"),
    ({"spec_decode_acceptance_length": 3.9}, "spec_decode_acceptance_length"),
    ({"spec_decode_per_position_acceptance_rates": [1.0, 1.0, 1.0]}, "rates summing"),
    ({"spec_decode_per_position_acceptance_rates": [0.2, 0.6, 0.0]}, "non-increasing"),
    ({"spec_decode_per_position_acceptance_rates": [1.5]}, "[0, 1]"),
    ({"spec_decode_acceptance_rate": 99.0}, "spec_decode_acceptance_rate"),
    ({"phases": [1, 2]}, "phases"),
    ({"phases": {"verify": "x"}}, "phases.verify"),
    ({"phases": {"verify": -1}}, "phases.verify"),
    ({"spec": "abc"}, "spec"),
    ({"extra": 5}, "extra"),
    ({"seed": "7"}, "seed"),
    ({"policy": ["share"]}, "policy"),
    ({"requests": {"r0": 1}}, "requests"),
    ({"requests": [5]}, "requests[0]"),
])
def test_impossible_figures_are_one_line_errors(tmp_path, change, needle):
    _rejects(tmp_path, {**_good(), **change}, needle)


def _record(**kw) -> dict:
    r = _good()["requests"][0]
    return {**_good(), "requests": [{**r, **kw}]}


@pytest.mark.parametrize("obj, needle", [
    (_record(accepted_per_pos=[2, 2, 2]), "accepted_per_pos"),  # sums to 6, not 3
    (_record(accepted_per_pos=[5, 0, 0]), "accepted_per_pos"),  # more than num_drafts
    (_record(num_accepted_tokens=9, accepted_per_pos=[]), "num_accepted_tokens"),
    (_record(finish_s=-1.0), "finish_s"),
    (_record(output_len=-4), "output_len"),
    (_record(itl_count=[1, 2]), "itl_s"),
    (_record(bogus=1), "unknown bogus"),
    (_record(request_id=None), "request_id"),
])
def test_impossible_request_records_are_one_line_errors(tmp_path, obj, needle):
    _rejects(tmp_path, obj, needle)


@pytest.mark.parametrize("text, needle", [
    ('{"duration": NaN, "completed": 1, "output_throughput": 1}', "finite"),
    ('{"duration": Infinity, "completed": 1, "output_throughput": 1}', "finite"),
    ('{"duration": 1e400, "completed": 1, "output_throughput": 1}', "finite"),
    ('{"duration": 1, "completed": ' + "1" * 5000 + ', "output_throughput": 1}', "finite"),
    ('{"a": ' + "[" * 50_000 + "]" * 50_000 + "}", "nested"),
    ('{"duration": "1", "completed": 1, "output_throughput": 1}', "duration"),
    ('{"duration": 1, "completed": 1, "output_throughput": null}', "output_throughput"),
    ("[1, 2]", "expected a JSON object"),
])
def test_vllm_bench_files_are_read_strictly(tmp_path, text, needle):
    _rejects(tmp_path, text, needle)


def test_a_figure_without_data_is_written_as_null_and_reads_as_missing(tmp_path):
    """A run without drafts has no acceptance length (NaN): the file stays strict JSON."""
    reqs = [RequestRecord("r0", 8, 1, 0.0, 0.1, 0.1)]
    res = Result.from_requests(mode="simulate", policy="fresh", requests=reqs, duration_s=1.0)
    assert math.isnan(res.get("spec_decode_acceptance_length"))
    p = tmp_path / "fresh.json"
    res.write(p)
    assert "NaN" not in p.read_text()
    back = load_result(p)
    assert back.get("spec_decode_acceptance_length") is None and back.get("completed") == 1
