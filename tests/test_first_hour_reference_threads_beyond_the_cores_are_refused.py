"""`reference.threads` had no upper bound: 100,000 made torch segfault (exit 139, no output) in
run-real and serve-reference, and 1,024 on 2 cores made a 2-request run take 40x as long with no
word. The spec now caps it at 1,024, and a run refuses more threads than the cores it may use,
one line each, before any engine starts."""

from __future__ import annotations

import pytest
from _cli import one_error_line

from mtpsim.errors import SpecError
from mtpsim.runs.executor import default_workers
from mtpsim.spec import load_experiment
from mtpsim.spec.sections import MAX_THREADS

REF = "experiments/reference-cpu.toml"
SMALL = ["--set", "workload.num_prompts=1", "--set", "workload.input_len=32",
         "--set", "workload.output_len=4", "-p", "fresh", "--no-probe"]


def test_the_spec_caps_threads():
    with pytest.raises(SpecError, match=rf"reference\.threads: expected a number in \[0, "
                       rf"{MAX_THREADS}\], got 100000"):
        load_experiment(REF, ["reference.threads=100000"])
    assert load_experiment(REF, [f"reference.threads={MAX_THREADS}"]).reference.threads == MAX_THREADS


def test_run_real_and_serve_reference_refuse_more_threads_than_cores(tmp_path):
    cores = default_workers()
    too_many = f"reference.threads={cores + 1}"
    want = (f"error: --set: reference.threads: expected at most the {cores} cores this process "
            f"may use (0 = torch's default), got {cores + 1}")
    for served in ([], ["--server"]):
        out = tmp_path / f"out{len(served)}"
        assert one_error_line("run-real", REF, "--out", str(out), *served, *SMALL,
                              "--set", too_many) == want
        assert not out.exists()  # refused before anything was written
    assert one_error_line("serve-reference", REF, "--port", "18127", "--set", too_many) == want
    assert one_error_line("serve-reference", REF, "--port", "18127",
                          "--set", "reference.threads=100000").endswith(
        f"reference.threads: expected a number in [0, {MAX_THREADS}], got 100000")
