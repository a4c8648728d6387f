"""`mtpsim run-real --out DIR` resumes the policies whose result in DIR is of the same settings.
run-real writes a result whole (a temporary file renamed into place), so a result in DIR that
does not read (cut short, empty, another version, a folder) was damaged or put there by
something else: it is refused in one line naming the file (exit 2) before anything runs, and
kept as it is. It used to be taken for "not finished": the policy reran and its result replaced
the file, silently. `--force` still replaces it; a round file of a `--rounds` run is checked
up front the same way."""

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.real.run import DAMAGED

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--set", "workload.num_prompts=2", "--set", "workload.input_len=32",
         "--set", "workload.output_len=4", "-p", "fresh", "-p", "share", "--no-probe"]


def _run_real(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", "run-real", "experiments/reference-cpu.toml",
                           "--out", str(out), "--set", "speculative.index_topk=16", *SMALL, *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.parametrize("text, expected", [
    ('{"schema": "mtpsim-result", "version": 1, "duration": ', "expected JSON (Expecting value"),
    ("", "expected JSON (Expecting value at line 1 column 1)"),
    ('{"schema": "mtpsim-result", "version": 99}', "version: expected 1, got 99"),
])
def test_a_damaged_result_is_named_kept_and_nothing_runs(tmp_path, text, expected):
    out = tmp_path / "out"
    out.mkdir()
    (out / "share.json").write_text(text)
    r = _run_real(out)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {out / 'share.json'}: {expected}"), r.stderr
    assert lines[0].endswith(DAMAGED) and "--force" in DAMAGED, lines[0]
    assert (out / "share.json").read_text() == text  # kept as it was
    assert not (out / "fresh.json").exists()  # refused before the first policy ran


def test_a_folder_where_a_result_goes_is_named(tmp_path):
    out = tmp_path / "out"
    (out / "share.json").mkdir(parents=True)
    r = _run_real(out)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"error: {out / 'share.json'}: expected the policy's result file or nothing there, got a "
        "folder: move it aside or choose another --out"], r.stderr


def test_a_damaged_round_file_is_refused_before_the_first_round(tmp_path):
    out = tmp_path / "out"
    (out / "rounds" / "r01").mkdir(parents=True)
    (out / "rounds" / "r01" / "share.json").write_text("{")
    r = _run_real(out, "--rounds", "2")
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {out / 'rounds' / 'r01' / 'share.json'}: "
                                                   "expected JSON"), r.stderr
    assert not (out / "rounds" / "r00").exists()


def test_force_replaces_a_damaged_result(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "share.json").write_text("{")
    r = _run_real(out, "--force")
    assert r.returncode == 0, r.stderr
    from mtpsim.result import load_result

    assert load_result(out / "share.json").policy == "share"
