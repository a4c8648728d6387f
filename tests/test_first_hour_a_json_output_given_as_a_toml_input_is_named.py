"""A result or a trace handed to a command that reads TOML (simulate, sweep, calibrate, run-real:
an experiment; advise: a deployment) is named as what it is and which command reads it, in one
line (exit 2). It used to read `expected valid TOML (Invalid statement (at line 1, column 1))`."""

import json
from pathlib import Path

import pytest
from _cli import one_error_line

ROOT = Path(__file__).resolve().parents[1]


def _one_line(*args: str) -> str:
    return one_error_line(*args)


@pytest.mark.parametrize("command, what", [(["simulate"], "an experiment file"),
                                           (["sweep"], "an experiment file"),
                                           (["calibrate"], "an experiment file"),
                                           (["run-real"], "an experiment file"),
                                           (["advise"], "a deployment file")])
def test_a_result_json_is_named_as_a_result(tmp_path, command, what):
    f = tmp_path / "fresh.json"
    f.write_text(json.dumps({"schema": "mtpsim-result", "version": 1, "mode": "simulate"}, indent=2))
    line = _one_line(command[0], str(f))
    assert line == f"error: {f}: expected {what} (TOML), got an mtpsim result (JSON), which mtpsim " \
                   "compare reads", line


def test_a_trace_is_named_as_a_trace(tmp_path):
    f = tmp_path / "fresh.trace.jsonl"
    f.write_text('{"format": "mtpsim-trace", "version": 1}\n{"num_reqs": 0}\n')
    line = _one_line("simulate", str(f))
    assert line == f"error: {f}: expected an experiment file (TOML), got an mtpsim trace (JSON " \
                   "Lines), which simulate reads with --trace FILE", line


@pytest.mark.parametrize("text, end", [('{"a": 1}', "got JSON"),
                                       ("a = [", "expected valid TOML (Invalid value (at end of document))"),
                                       ("1\n", "expected valid TOML (")])
def test_other_json_and_plain_toml_mistakes(tmp_path, text, end):
    f = tmp_path / "x.toml"
    f.write_text(text)
    line = _one_line("simulate", str(f))
    assert end in line and line.startswith(f"error: {f}: "), line
