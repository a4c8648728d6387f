"""Result files: round trip, vLLM bench JSON as input, bad files give one-line errors."""

import json

import pytest

from mtpsim.errors import ResultError
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result, load_result


def make_result() -> Result:
    reqs = [RequestRecord("r0", 8, 4, 0.0, 0.1, 0.4, [0.1], [3], 2, 6, 3, [2, 1, 0])]
    return Result.from_requests(mode="simulate", policy="share", requests=reqs, duration_s=0.5,
                                seed=7, phases={"verify": 0.01})


def test_result_round_trips_through_json(tmp_path):
    res = make_result()
    path = tmp_path / "share.json"
    res.write(path)
    back = load_result(path)
    assert back.policy == "share" and back.seed == 7 and back.mode == "simulate"
    assert back.metrics == res.metrics
    assert back.requests == res.requests
    assert back.phases == {"verify": 0.01}


def test_result_json_uses_vllm_bench_key_names_at_top_level(tmp_path):
    obj = make_result().to_json()
    for key in ("duration", "completed", "output_throughput", "median_tpot_ms", "p99_itl_ms",
                "spec_decode_acceptance_length", "spec_decode_per_position_acceptance_rates"):
        assert key in obj


def test_vllm_bench_json_reads_as_a_result(tmp_path):
    bench = {"duration": 320.0, "completed": 256, "output_throughput": 1629.9,
             "median_tpot_ms": 18.41, "spec_decode_acceptance_length": 2.83,
             "spec_decode_per_position_acceptance_rates": [0.8745, 0.601, 0.3534],
             "date": "20250101-000000", "itls": [[0.01]]}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench))
    res = load_result(path)
    assert res.mode == "vllm-bench"
    assert res.get("output_throughput") == 1629.9
    assert res.get("spec_decode_per_position_acceptance_rates") == [0.8745, 0.601, 0.3534]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("not json", None),
        ("[1, 2]", None),
        ('{"completed": 3}', "duration"),
        ('{"duration": "long", "completed": 1, "output_throughput": 2}', "duration"),
        ('{"schema": "mtpsim-result", "version": 99}', "version"),
        ('{"schema": "mtpsim-result", "version": 1, "mode": "dream"}', "mode"),
    ],
)
def test_bad_result_files_name_the_file_and_field(tmp_path, content, field):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ResultError) as e:
        load_result(path)
    msg = e.value.message()
    assert str(path) in msg and "\n" not in msg
    if field:
        assert f": {field}:" in msg


def test_missing_result_file_is_a_user_error(tmp_path):
    with pytest.raises(ResultError, match="file not found"):
        load_result(tmp_path / "nope.json")
