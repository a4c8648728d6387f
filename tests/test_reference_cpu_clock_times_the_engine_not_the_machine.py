"""`reference.clock = "cpu"` times the reference runner on its thread's CPU time: another
process competing for the core does not inflate the timings, and waiting for an arrival
advances the clock by the wait instead of sleeping."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from _reference_models import tiny_model

from mtpsim.engine import weights
from mtpsim.engine.model import PhaseTimer
from mtpsim.engine.runner import run_policy
from mtpsim.spec import experiment_from_dict
from mtpsim.trace import read_trace


def test_the_cpu_clock_does_not_count_sleeping():
    dev, cpu, wall = torch.device("cpu"), PhaseTimer("cpu"), PhaseTimer("wall")
    t0, w0 = cpu.now(dev), wall.now(dev)
    time.sleep(0.3)
    assert cpu.now(dev) - t0 < 0.05
    assert wall.now(dev) - w0 >= 0.3  # each engine's timer keeps its own clock


@pytest.mark.slow
def test_arrivals_advance_the_cpu_clock_without_waiting(tmp_path: Path):
    path = tmp_path / "tiny.safetensors"
    weights.save(tiny_model(vocab=256).float(), path, torch.float32, {})
    exp = experiment_from_dict({
        "policies": ["fresh"], "seed": 1,
        "speculative": {"num_speculative_tokens": 2, "index_topk": 8},
        "workload": {"num_prompts": 3, "input_len": 20, "output_len": 6, "max_concurrency": 1,
                     "request_rate": 0.005},
        "reference": {"weights": str(path), "device": "cpu", "threads": 1, "clock": "cpu"}})
    t0 = time.perf_counter()
    result, trace = run_policy(exp, "fresh")
    # Sleeping until the arrivals would take ~10 minutes; the margin tolerates a loaded machine.
    assert time.perf_counter() - t0 < 120.0
    arrivals = sorted(r.arrival_s for r in result.requests)
    assert arrivals[-1] > 150.0  # the clock passed the intended send times
    assert result.extra.clock == "cpu" and trace.meta.clock == "cpu"


def test_the_trace_reads_back_under_the_cpu_clock(tmp_path: Path):
    """The engine is built on the wall clock and serves on the CPU clock: its step times must
    start at 0 on the serving clock (they were once thread time minus a wall-clock origin,
    thousands of seconds negative, and the trace reader rightly refused them)."""
    path = tmp_path / "tiny.safetensors"
    weights.save(tiny_model(vocab=256).float(), path, torch.float32, {})
    exp = experiment_from_dict({
        "policies": ["share"], "seed": 2,
        "speculative": {"num_speculative_tokens": 2, "index_topk": 8},
        "workload": {"num_prompts": 3, "input_len": 20, "output_len": 6, "max_concurrency": 2},
        "reference": {"weights": str(path), "device": "cpu", "threads": 1, "clock": "cpu"}})
    _, trace = run_policy(exp, "share")
    out = tmp_path / "share.trace.jsonl"
    trace.write(out)
    steps = read_trace(out).steps
    times = [s.time_s for s in steps]
    assert times[0] == 0.0 and times == sorted(times) and times[-1] < 60.0
