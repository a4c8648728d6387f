"""A bad `reference.weights` value is one line on stderr (exit 2, no traceback), found before any
policy runs: a damaged sidecar config or a file whose safetensors header does not read used to
be found only when the first policy loaded the weights, after the progress bar had started,
and rich ended the bar with a blank line before the error line. A spec error only the engine
can see (index_topk wider than every context) is still found in the run, and is one line too."""

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.engine import weights
from mtpsim.errors import SpecError

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--set", "workload.num_prompts=1", "--set", "workload.input_len=32",
         "--set", "workload.output_len=4", "-p", "fresh"]


def _run_real(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", "run-real", "experiments/reference-cpu.toml",
                           "--out", str(out), "--no-probe", *SMALL, *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def _damaged(tmp_path: Path, config: str, tensors: bytes) -> Path:
    path = tmp_path / "w.safetensors"
    path.write_bytes(tensors)
    weights.sidecar(path).write_text(config)
    return path


def test_a_damaged_sidecar_or_header_is_refused_before_the_run(tmp_path):
    good = weights.NAMED["small"].read_bytes()
    with pytest.raises(SpecError, match=r"w\.json: config: expected an object of model settings"):
        weights.check(_damaged(tmp_path, "{}", good))
    with pytest.raises(SpecError, match=r"w\.safetensors: expected safetensors weights matching the "
                       r"config \(SafetensorError"):
        weights.check(_damaged(tmp_path, weights.sidecar(weights.NAMED["small"]).read_text(), b"garbage"))
    weights.check(weights.NAMED["small"])  # the shipped weights pass


def test_a_bad_weights_value_is_one_line_and_nothing_runs(tmp_path):
    bad = _damaged(tmp_path, "{}", b"garbage")
    r = _run_real(tmp_path / "out", "--set", f"reference.weights={bad}")
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert lines == [f"error: {weights.sidecar(bad)}: config: expected an object of model settings"], r.stderr
    assert not list((tmp_path / "out").glob("*.json"))


def test_an_error_found_inside_the_run_is_one_line_too(tmp_path):
    r = _run_real(tmp_path / "out", "--set", "speculative.index_topk=64")
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: experiments/reference-cpu.toml: "
                                                   "speculative.index_topk: expected at most"), r.stderr
