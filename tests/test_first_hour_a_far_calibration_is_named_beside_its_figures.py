"""A plain `simulate` priced by a calibration measured far from its spec says so, one line on
stderr after the tables: a reference-engine CPU calibration applied to experiments/pr47352.toml
(DeepSeek-V3.2 on 4 x B200) priced 19,544 s of serving (783,479 s with a reference-cpu trace)
with no word that the step costs were a 1-thread CPU's. The line names the calibration, its
machine against the spec's GPUs and every axis outside its range (with --json, the document's
"warnings" too); a calibration whose range holds the spec, on a host-run engine, prints none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAL = "calibration.file=docs/data/long-context-v2/calibration-long.json"  # reference engine, CPU
# inside its range: k = 4, top-64, 768-1,024-token contexts, batch <= 4 (it holds 1-8)
REF = ("experiments/reference-cpu.toml", "--set", CAL, "--set", "speculative.num_speculative_tokens=4",
       "--set", "workload.num_prompts=8", "-p", "fresh", "-p", "share")


def _simulate(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "mtpsim", "simulate", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_cpu_calibration_on_a_gpu_spec_is_named(tmp_path):
    r = _simulate("experiments/pr47352.toml", "--set", CAL, "--set", "workload.num_prompts=8",
                  "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # stdout stays one JSON document, and carries the line too
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: priced with")]
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert doc["warnings"] == [line]
    assert "calibration-long.json (reference engine traces on a CPU (AMD EPYC, 1 thread))" in line
    assert "its machine, not this spec's 4 x B200" in line
    assert "context 10,240-12,288 outside 256-7,252 (0.8)" in line
    assert "not a prediction for 4 x B200" in line


def test_a_calibration_whose_range_holds_the_spec_prints_nothing(tmp_path):
    r = _simulate(*REF)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr and "warning" not in r.stdout


def test_far_on_the_range_alone_is_named_for_a_host_engine(tmp_path):
    r = _simulate(*REF,
                  "--set", "workload.input_len=30000")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("warning: priced with"))
    assert "its machine" not in line and "context 30,000-30,256 outside 256-7,252 (2.1)" in line
