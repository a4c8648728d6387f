"""Mistakes a new user makes in the first hour, each found by walking the README, ending in
one line that says what the file is and what was expected (exit 2, no traceback): an empty
experiment file (it used to blame engine.tp for the default model's weights), a result file
handed to --trace (it used to blame line 1's JSON), `--set engine=3` (it used to blame the
experiment file), and "expected a experiment file"."""

import subprocess
import sys
from pathlib import Path

import pytest
from _cli import one_error_line

ROOT = Path(__file__).resolve().parents[1]
PR = "experiments/pr47352.toml"


def _one_line(args: list[str]) -> str:
    return one_error_line(*args)


@pytest.mark.parametrize("text", ["", "# only a comment\n\n"])
@pytest.mark.parametrize("command", [["simulate", "-j", "1"], ["calibrate"],
                                     ["sweep", "-j", "1"]])
def test_an_experiment_file_that_sets_nothing_says_so(tmp_path, text, command):
    f = tmp_path / "exp.toml"
    f.write_text(text)
    line = _one_line([command[0], str(f), *command[1:]])
    assert f"{f}: expected an experiment (sections model," in line, line
    assert "got a file that sets nothing" in line and "engine.tp" not in line, line


def test_an_empty_file_with_set_overrides_is_still_an_experiment(tmp_path):
    from mtpsim.spec.experiment import load_experiment

    f = tmp_path / "exp.toml"
    f.write_text("")
    assert load_experiment(f, ["engine.tp=8"]).engine.tp == 8


def test_a_result_given_as_a_trace_is_named_as_a_result(tmp_path):
    out = tmp_path / "sim"
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", PR, "--out", str(out), "-j", "1"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    line = _one_line(["simulate", PR, "--trace", str(out / "fresh.json")])
    assert f"{out / 'fresh.json'}: line 1: expected a trace (JSON Lines" in line, line
    assert "got an mtpsim result" in line and ".trace.jsonl" in line, line


def test_a_pretty_printed_json_given_as_a_trace_is_named_one_document(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{\n  "format": "mtpsim-trace"\n}\n')
    line = _one_line(["simulate", PR, "--trace", str(f)])
    assert "got one JSON document over several lines" in line, line


def test_a_section_set_to_a_value_blames_the_set_flag():
    line = _one_line(["simulate", PR, "--set", "engine=3"])
    assert line == "error: --set: engine: expected a table ([section])", line


def test_a_folder_as_the_experiment_reads_as_english(tmp_path):
    line = _one_line(["simulate", str(tmp_path)])
    assert line.endswith(": expected an experiment file, got a folder"), line


def _simulated(tmp_path: Path, folder: str) -> Path:
    out = tmp_path / folder
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", PR, "--out", str(out), "-j", "1"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def test_compare_reads_a_folder_whose_name_holds_an_equals_sign(tmp_path):
    out = _simulated(tmp_path, "k=3")  # was read as POLICY "…/k" = PATH "3": "3: result file not found"
    r = subprocess.run([sys.executable, "-m", "mtpsim", "compare", str(out), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    line = _one_line(["compare", str(tmp_path / "k=4")])
    assert line == f"error: {tmp_path / 'k=4'}: result file not found", line


def test_compare_refuses_a_label_that_is_not_a_policy(tmp_path):
    out = _simulated(tmp_path, "sim")  # was accepted, then "nothing to compare"
    line = _one_line(["compare", f"bogus={out / 'fresh.json'}", f"share={out / 'share.json'}"])
    assert line.startswith("error: inputs: bogus="), line
    assert "expected [POLICY=]PATH with POLICY one of fresh, share" in line, line


@pytest.mark.parametrize("below", ["", "sub/x"])
def test_advise_checks_its_point_dir_before_any_draw(tmp_path, below):
    """A file where --point-dir's folder would go: refused before the simulations (it was
    refused after them, on the first 'cannot tell', and the printed advice was lost)."""
    blocker = tmp_path / "taken"
    blocker.write_text("")
    target = blocker / below if below else blocker
    line = _one_line(["advise", "experiments/advise-deepseek-v3.2-b200.toml", "--draws", "16",
                      "--max-draws", "16", "-j", "1", "--point-dir", str(target)])
    assert line == (f"error: --point-dir: {target}: expected a folder to write into "
                    f"({blocker} is a file)"), line


def test_advise_does_not_create_its_point_dir_up_front(tmp_path):
    from mtpsim.fileio import future_dir

    assert future_dir(tmp_path / "a" / "b", "--point-dir") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()


def test_a_missing_calibration_file_names_the_field_and_where_it_was_set(tmp_path):
    """Was 'experiments/experiments/pr47352.toml: file not found': the joined path alone, which
    hid which field was wrong. A --set path is taken from the current folder (it was from the
    experiment's folder until the first-hour sitting of 2026-12-03 11:36)."""
    line = _one_line(["simulate", PR, "--set", "calibration.file=nope.json"])
    assert line.startswith("error: --set: calibration.file: ") and "'nope.json'" in line, line
    assert "current folder" in line, line
    spec = tmp_path / "c.toml"
    spec.write_text('[calibration]\nfile = "missing.json"\n')
    line = _one_line(["simulate", str(spec), "--uncertainty", "4"])
    assert line.startswith(f"error: {spec}: calibration.file: "), line
    assert str(tmp_path / "missing.json") in line, line
