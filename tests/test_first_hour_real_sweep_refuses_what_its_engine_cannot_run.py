"""`mtpsim sweep --engine E` applies run-real's refusals to every grid point before any point
runs, naming the point: a reference sweep of an mla model (DeepSeek-V3) used to run the small
DSA model for each point without a word, and one of pr47352 (prompts longer than the reference
model's positions) loaded the model and failed inside the first point."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("spec, sets, expected", [
    ("experiments/reference-cpu.toml", ["model.preset=deepseek-v3", 'policies=["fresh"]',
                                        "workload.num_prompts=1,2"],
     "error: --set: model.family: expected 'dsa_mla' with the reference engine"),
    ("experiments/reference-cpu.toml", ["workload.input_len=32,9000", "workload.output_len=4",
                                        "speculative.index_topk=16"],
     "error: experiments/reference-cpu.toml: workload: expected prompt + output within the "
     "reference model's"),
])
def test_a_point_the_engine_cannot_run_is_one_line_naming_it(tmp_path, spec, sets, expected):
    out = tmp_path / "sw"
    r = subprocess.run([sys.executable, "-m", "mtpsim", "sweep", spec, "--engine", "reference", "-j", "1",
                        *[x for s in sets for x in ("--set", s)], "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), r.stderr
    assert lines[0].endswith(")") and "(at workload." in lines[0], lines[0]
    assert not out.exists()
