"""`mtpsim run-real --engine reference` serves the spec's workload per policy, writes a Result in
the simulator's schema (with per-request records) plus a trace, and skips finished policies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _reference_models import tiny_spec
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.result import load_result
from mtpsim.trace import read_trace

SPEC = """
description = "tiny"
seed = 3
policies = ["fresh", "share"]
[speculative]
num_speculative_tokens = 2
index_topk = 8
[acceptance]
per_position = [0.8, 0.6]
[workload]
num_prompts = 3
input_len = 20
output_len = 10
max_concurrency = 2
temperature = 1.0
[reference]
weights = "{weights}"
device = "cpu"
threads = 1
"""


def _setup(tmp_path: Path) -> Path:
    return tiny_spec(tmp_path, SPEC)


@pytest.mark.slow
def test_results_traces_and_rerun_skip(tmp_path):
    spec, out = _setup(tmp_path), tmp_path / "out"
    r = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out)])
    assert r.exit_code == 0, r.output
    for policy in ("fresh", "share"):
        res = load_result(out / f"{policy}.json")
        assert res.mode == "reference" and res.policy == policy
        assert res.get("completed") == 3 and res.get("total_output_tokens") == 30
        assert len(res.requests) == 3 and all(q.output_len == 10 for q in res.requests)
        assert res.get("spec_decode_num_drafts") == sum(q.num_drafts for q in res.requests)
        tr = read_trace(out / f"{policy}.trace.jsonl")
        assert tr.policy == policy and tr.num_speculative_tokens == 2
        assert sum(tr.accepted_per_pos()) == res.get("spec_decode_accepted_tokens")
    share = json.loads((out / "share.json").read_text())
    assert share["extra"]["mtp_indexer_calls_per_step"][1] == 0
    again = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out)])
    assert again.exit_code == 0 and "kept" in again.output


def test_bad_weights_path_is_a_one_line_error(tmp_path):
    spec = _setup(tmp_path)
    r = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(tmp_path / "o"),
                                 "--set", "reference.weights=/nonexistent.safetensors"])
    assert r.exit_code == 2
    assert "reference.weights" in r.output and "Traceback" not in r.output


def test_unknown_engine_is_a_one_line_error(tmp_path):
    r = CliRunner().invoke(app, ["run-real", str(_setup(tmp_path)), "--engine", "nope"])
    assert r.exit_code == 2 and "--engine" in r.output
