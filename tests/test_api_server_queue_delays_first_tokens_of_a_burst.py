"""The API server takes requests one at a time (calibration.frontend_ms_per_request): a burst at
t = 0 reaches the engine spread out, and the client's TTFT counts the wait; requests sent slower
than the server's rate pay only its time; with max_concurrency it is not modelled."""

import numpy as np
import pytest

from mtpsim.sim.simulator import frontend_queue, simulate
from mtpsim.spec import experiment_from_dict


def exp(frontend_ms: float, **workload):
    w = {"num_prompts": 64, "input_len": 64, "output_len": 8, "request_rate": float("inf")}
    return experiment_from_dict({
        "engine": {"tp": 4, "max_num_seqs": 256, "async_scheduling": False},
        "model": {"quantization": "nvfp4"}, "speculative": {"num_speculative_tokens": 0},
        "workload": {**w, **workload},
        "calibration": {"frontend_ms_per_request": frontend_ms}})


def test_one_server_takes_a_burst_in_order():
    assert frontend_queue(np.zeros(4), 0.01) == pytest.approx([0.01, 0.02, 0.03, 0.04])
    # sends slower than the server: each waits only for its own processing
    assert frontend_queue(np.array([0.0, 1.0, 2.0]), 0.01) == pytest.approx([0.01, 1.01, 2.01])


def test_a_burst_waits_for_the_api_server_in_its_ttft():
    base = simulate(exp(0.0), "no_mtp").metrics
    queued = simulate(exp(50.0), "no_mtp").metrics
    # 64 requests at 50 ms each: the last reaches the engine 3.2 s after it was sent
    assert queued["p99_ttft_ms"] > 3000 > base["p99_ttft_ms"]
    assert queued["median_ttft_ms"] - base["median_ttft_ms"] > 1000


def test_no_queue_under_a_concurrency_limit():
    a = simulate(exp(50.0, max_concurrency=8), "no_mtp").metrics
    b = simulate(exp(0.0, max_concurrency=8), "no_mtp").metrics
    assert a["median_ttft_ms"] == b["median_ttft_ms"]
