"""`mtpsim sweep --engine reference --server` runs each point's policies through the benchmark
client, which drew its own rich progress bar on any stderr: on a log file or a pipe rich ends
it with a blank line, one per policy run, between the sweep's lines (and on a terminal a worker's
bar fought the sweep's own). Now a sweep's workers draw no bench bar (the sweep's bar shows the
progress), and the client draws one only where stderr is a terminal."""

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.client import bench

ROOT = Path(__file__).resolve().parents[1]


def test_the_bench_client_draws_no_bar_off_a_terminal(capsys):
    assert bench._progress(True, 3) is None  # capsys: stderr is not a terminal
    assert bench._progress(False, 3) is None


@pytest.mark.slow
def test_a_served_sweep_leaves_no_blank_line_on_a_non_terminal_stderr(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "mtpsim", "sweep", "experiments/reference-cpu.toml",
         "--engine", "reference", "--server", "-j", "1", "--set", "workload.num_prompts=1",
         "--set", "workload.input_len=32", "--set", "workload.output_len=4",
         "--set", "speculative.index_topk=16", "--set", "policies=[\"fresh\"]",
         "--set", "speculative.num_speculative_tokens=2,3", "--out", str(tmp_path / "sw")],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    assert len(list((tmp_path / "sw").glob("points/*/r0/fresh.json"))) == 2
    assert "" not in r.stderr.splitlines(), r.stderr  # no blank line left by a bench bar
