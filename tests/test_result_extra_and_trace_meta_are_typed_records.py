"""`Result.extra` and `Trace.meta` are typed records (mtpsim.records): every key declared once,
read as attributes. Every shipped result and trace still loads and writes back what it held;
keys this version does not know survive a round trip; a known key of the wrong type is one line
naming the file and the key; and no module reads either record by a string key."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from mtpsim.errors import ResultError, TraceError
from mtpsim.records import RunExtra
from mtpsim.result import load_result
from mtpsim.trace_records import TraceMeta

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted(p for d in ("docs", "experiments") for p in (ROOT / d).rglob("*.json")
                 if '"mtpsim-result"' in p.read_text(encoding="utf-8", errors="replace")[:400])
TRACES = sorted((ROOT / "docs").rglob("*.trace.jsonl.gz"))


def _kept(original: dict, written: dict) -> None:
    """What was recorded comes back: every non-null key with its value (a null one may go)."""
    assert {k: v for k, v in original.items() if v is not None} == {
        k: v for k, v in written.items() if v is not None}


@pytest.mark.slow  # reads every shipped file (1,108 results, 30 MB)
def test_every_shipped_result_loads_and_writes_its_extra_back():
    assert len(RESULTS) > 100, "the shipped results moved: point the test at them"
    for path in RESULTS:
        original = json.loads(path.read_text(encoding="utf-8")).get("extra") or {}
        _kept(original, load_result(path).to_json()["extra"])


@pytest.mark.slow  # reads every shipped file (1,108 results, 30 MB)
def test_every_shipped_trace_header_loads_and_writes_its_meta_back():
    assert len(TRACES) > 100
    for path in TRACES:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            original = json.loads(f.readline())["meta"]
        _kept(original, TraceMeta.from_json(original, path, TraceError).to_json())


def test_unknown_keys_survive_and_missing_keys_read_as_none():
    extra = RunExtra.from_json({"from_a_newer_version": [1, 2], "num_steps": 7}, "r.json", ResultError)
    assert extra.num_steps == 7 and extra.sharing_engaged is None
    assert extra.to_json() == {"num_steps": 7, "from_a_newer_version": [1, 2]}


def test_a_null_that_means_something_is_written_beside_its_group():
    written = RunExtra(num_preemptions=0, kv_cache_tokens=1000).to_json()
    assert written == {"num_preemptions": 0, "kv_cache_tokens": 1000, "kv_cache_peak_pct": None}
    assert "kv_cache_peak_pct" not in RunExtra(engine="vllm").to_json()


def test_a_simulated_result_records_every_simulator_field():
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    res = simulate(load_experiment(ROOT / "experiments" / "pr47352.toml",
                                   ["workload.num_prompts=8"]), "share")
    written = res.to_json()["extra"]
    assert list(written)[:4] == ["num_steps", "decode_only_steps", "python_iterations",
                                 "step_saving_vs_fresh_s"]
    assert res.extra.expected_acceptance_length > 1.0 and written["dp_ranks"] == 1


@pytest.mark.parametrize(("extra", "where"), [({"num_steps": "many"}, "extra.num_steps"),
                                              ({"num_steps": True}, "extra.num_steps"),
                                              ({"rounds": {"a": 1}}, "extra.rounds")])
def test_a_known_key_of_the_wrong_type_is_one_line(tmp_path, extra, where):
    good = json.loads(RESULTS[0].read_text(encoding="utf-8"))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**good, "extra": extra}), encoding="utf-8")
    with pytest.raises(ResultError) as e:
        load_result(path)
    assert e.value.message().startswith(f"{path}: {where}: expected ")
    assert "\n" not in e.value.message()


def test_no_module_reads_extra_or_meta_by_a_string_key():
    pattern = re.compile(r"\.(extra|meta)(\[|\.get\(|\.items\(|\.update\()|in \w+\.(extra|meta)(?![.\w])")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in (ROOT / "mtpsim").rglob("*.py")
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(line)]
    assert hits == []
