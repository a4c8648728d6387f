"""`mtpsim simulate EXP --trace share.trace.jsonl` (a share trace alone, e.g. the one run-real
wrote last) cannot fit the indexer phase: only fresh runs the indexer at every draft step. The
line names the flag and the policies given; it used to read `error: traces: expected a fresh
trace to fit the draft_decode_indexer phase`, naming no flag a user typed."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_share_trace_alone_is_one_line_naming_the_flag_and_the_policy(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "mtpsim", "run-real", "experiments/reference-cpu.toml",
                        "-p", "share", "--no-probe", "--set", "workload.num_prompts=2",
                        "--set", "workload.input_len=64", "--set", "workload.output_len=8",
                        "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", "experiments/reference-cpu.toml",
                        "-j", "1", "--trace", str(out / "share.trace.jsonl")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.splitlines() == [
        "error: --trace: expected a fresh trace among them to fit the draft_decode_indexer phase "
        "(only fresh runs the indexer at every draft step), got share"], r.stderr
