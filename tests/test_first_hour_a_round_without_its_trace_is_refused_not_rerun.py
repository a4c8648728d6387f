"""`run-real --rounds R --out DIR` resumes the rounds already in DIR/rounds/. A round's trace is
written before its result, so a round result without its trace was moved or deleted; the run
took it for "not done", reran that round and replaced the finished result, silently. Now it is
one line naming the result and the missing trace, exit 2, before anything runs; the result is
kept, and `--force` reruns."""

import subprocess
import sys

import pytest
from _cli import ROOT, one_error_line

RUN = ["run-real", "experiments/reference-cpu.toml", "--engine", "reference", "-p", "fresh",
       "--rounds", "2", "--no-probe", "--set", "workload.num_prompts=2",
       "--set", "workload.input_len=32", "--set", "workload.output_len=4",
       "--set", "speculative.index_topk=16"]


@pytest.mark.slow
def test_a_round_result_whose_trace_is_gone_is_named_and_kept(tmp_path):
    out = tmp_path / "out"
    args = [*RUN, "--out", str(out)]
    first = subprocess.run([sys.executable, "-m", "mtpsim", *args], capture_output=True, text=True,
                           cwd=ROOT, timeout=600)
    assert first.returncode == 0, first.stderr
    (out / "fresh.json").unlink()  # as if interrupted before the pooling
    round_result = out / "rounds" / "r01" / "fresh.json"
    round_result.with_suffix(".trace.jsonl").unlink()
    before = round_result.read_bytes()
    line = one_error_line(*args, quiet_stdout=True)
    assert line.startswith(f"error: {round_result}: expected its trace fresh.trace.jsonl beside it"), line
    assert "--force" in line and round_result.read_bytes() == before
    forced = subprocess.run([sys.executable, "-m", "mtpsim", *args, "--force"], capture_output=True,
                            text=True, cwd=ROOT, timeout=600)
    assert forced.returncode == 0, forced.stderr
    assert round_result.with_suffix(".trace.jsonl").is_file() and (out / "fresh.json").is_file()
