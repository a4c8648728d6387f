"""`mtpsim compare` reads result JSON files (what simulate and run-real write as DIR/POLICY.json,
or a vLLM bench JSON). Handed one of mtpsim's other inputs, it says what the file is and what
to run, in one line (exit 2): an experiment TOML used to read `expected JSON (Expecting value at
line 1 column 1)`, which blames the file's syntax rather than naming it a spec."""

from pathlib import Path

import pytest
from _cli import one_error_line

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ("expected a result JSON (what mtpsim simulate or run-real writes as DIR/POLICY.json, "
            "or vllm bench serve --save-result), got ")


def _one_line(*args: str) -> str:
    return one_error_line("compare", *args)


@pytest.mark.parametrize("spec", ["experiments/pr47352.toml", "experiments/reference-cpu.toml"])
def test_an_experiment_spec_is_named_with_the_command_that_makes_results(spec):
    line = _one_line(spec)
    stem = Path(spec).stem
    assert line == (f"error: {spec}: {EXPECTED}an experiment spec (TOML): run it first, e.g. "
                    f"mtpsim simulate {spec} --out runs/{stem}, then mtpsim compare runs/{stem}"), line


def test_an_advise_deployment_is_named_as_one():
    spec = "experiments/advise-deepseek-v3.2-b200.toml"
    line = _one_line(spec)
    assert line == f"error: {spec}: {EXPECTED}a deployment file for mtpsim advise (TOML): run it " \
                   f"with mtpsim advise {spec}", line


def test_a_trace_is_named_and_points_to_its_result(tmp_path):
    trace = tmp_path / "fresh.trace.jsonl"
    trace.write_text('{"format": "mtpsim-trace", "version": 1}\n{"step": 0}\n')
    line = _one_line(str(trace))
    assert line.startswith(f"error: {trace}: {EXPECTED}an mtpsim trace (JSON Lines)"), line


def test_damaged_json_still_names_where_it_breaks(tmp_path):
    bad = tmp_path / "fresh.json"
    bad.write_text('{"schema": "mtpsim-result",\n  "duration": ')
    line = _one_line(str(bad))
    assert line.startswith(f"error: {bad}: expected JSON (Expecting value at line 2"), line
