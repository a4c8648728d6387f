"""Small lines that said something untrue (crash hunt #15): a real sweep's title without its
policy count and with "mean of 1 repeats"; "on 100000 workers" for the -j given, not the
workers that ran; "(0x real time)" for a short run; "kept 1 finished points"; serve-reference
blaming --max-num-seqs (left at its default) for the --max-model-len given; and run-real at a
tiny request_rate printing nothing for many minutes off a terminal."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.console import StdConsole
from mtpsim.errors import UserError
from mtpsim.real_sweep import RealPlan
from mtpsim.report.simulate import times
from mtpsim.report.sweep import interrupted, print_sweep
from mtpsim.runs.real import arrival_note
from mtpsim.runs.sweep import SweepRun
from mtpsim.serve_reference import limits
from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]
REF = str(ROOT / "experiments" / "reference-cpu.toml")
PR = str(ROOT / "experiments" / "pr47352.toml")
SMALL = ["--set", "workload.num_prompts=2", "--set", "workload.input_len=64",
         "--set", "workload.output_len=8"]


def cli(args: list[str]) -> str:
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.output


def test_a_short_simulation_prints_a_real_speed_ratio():
    assert (times(0.2134), times(1.26), times(12.3), times(2345.6)) == (
        "0.21x", "1.3x", "12x", "2,346x")
    line = next(ln for ln in cli(["simulate", REF, "-p", "fresh", *SMALL]).splitlines()
                if ln.startswith("simulated "))
    assert re.fullmatch(r"simulated 0\.\d+ s of serving in [0-9.]+ s wall \([0-9.]+x real time\)",
                        line), line
    assert "(0x real time)" not in line


def test_the_worker_count_is_the_workers_that_ran():
    out = cli(["sweep", PR, "--set", "workload.num_prompts=8",
               "--set", "workload.max_concurrency=1,4", "-j", "100000"])
    assert "2 points in " in out and out.rstrip().endswith("wall on 2 workers")


def test_a_real_sweeps_title_counts_policies_and_repeats(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    rows = [{"speculative.index_topk": t, "policy": p, "output_throughput": 10.0,
             "point_id": f"p{t}"} for t in (16, 32) for p in ("fresh", "share")]
    for repeats, how in ((1, "1 repeat"), (3, "mean of 3 repeats")):
        out = io.StringIO()
        monkeypatch.setattr("sys.stdout", out)
        run = SweepRun("ref.toml", [], ["speculative.index_topk"], 2, rows, 1.0, 0,
                       plan=RealPlan("reference", repeats))
        print_sweep(StdConsole(), run, out=Path("runs/x"))
        assert out.getvalue().splitlines()[0].strip() == (
            f"ref.toml sweep: 2 points x 2 policies (reference, {how})")


def test_the_interrupt_line_counts_points_in_the_singular_too():
    line = interrupted(Path("runs/x"), 1, 2, ["exp.toml"])
    assert "kept 1 point finished in runs/x/points" in line and "not kept: 1 point;" in line


def test_a_too_long_max_model_len_is_blamed_on_itself(monkeypatch):
    monkeypatch.setattr(limits, "physical_memory_bytes", lambda: 16 * 2**30)
    cfg = {"n_layer": 2, "dim": 64, "index_head_dim": 16, "max_seq_len": 0}
    with pytest.raises(UserError) as e:
        limits.check_server_limits(cfg, 100_000_000, 8, 3, None)
    assert e.value.field == "--max-model-len"
    assert e.value.expected.startswith("expected at most 4,971,022 tokens (one sequence's KV cache")
    with pytest.raises(UserError) as e:
        limits.check_server_limits(cfg, 1_000_000, 4000, 3, None)
    assert e.value.field == "--max-num-seqs"
    assert e.value.expected.startswith("expected at most 4 sequences of --max-model-len 1,000,000")
    limits.check_server_limits(cfg, 1_000_000, 4, 3, None)  # what it said fits


def test_slow_arrivals_are_announced_before_the_run(tmp_path):
    slow = load_experiment(REF, ["workload.request_rate=0.001", "workload.num_prompts=2"])
    assert arrival_note(slow) == ("note: 2 requests at workload.request_rate 0.001/s arrive over "
                                  "about 2,000 s (33 min) of each policy's run")
    assert arrival_note(load_experiment(REF, [])) is None
    # off a terminal the note is the first line, long before the first arrival
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "mtpsim", "run-real", REF, *SMALL, "-p", "fresh",
                             "--no-probe", "--set", "workload.request_rate=0.001",
                             "--out", str(tmp_path / "out")], cwd=ROOT, env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        t0 = time.monotonic()
        line = proc.stderr.readline()
        assert line.startswith("note: 2 requests at workload.request_rate 0.001/s"), line
        assert time.monotonic() - t0 < 60
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
