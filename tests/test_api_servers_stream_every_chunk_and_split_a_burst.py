"""The API servers' output side (calibration.frontend_us_per_chunk): they stream each step's
chunks in step order, so tokens reach the client late once a step's chunks take longer than the
step; and the input side is split over engine.api_server_count servers (vLLM 0.33.0 runs one per
DP rank by default, vLLM 0.13.0 one for all)."""

import numpy as np
import pytest

from mtpsim.sim.simulator import api_servers, frontend_queue, simulate, streamed_times
from mtpsim.spec import experiment_from_dict


def test_streaming_keeps_up_while_steps_outlast_their_chunks():
    times = np.array([0.0, 1.0, 2.0, 3.0])
    assert streamed_times(times, np.array([2, 2, 2]), 0.1) == pytest.approx([0.0, 1.2, 2.2, 3.2])


def test_streaming_falls_behind_and_the_lag_grows():
    times = np.array([0.0, 1.0, 2.0, 3.0])
    # 15 chunks of 0.1 s after each 1 s step: 1.5 s of work per step
    assert streamed_times(times, np.array([15, 15, 15]), 0.1) == pytest.approx([0.0, 2.5, 4.0, 5.5])


def test_two_servers_take_alternate_requests_of_a_burst():
    assert frontend_queue(np.zeros(4), 0.01, 2) == pytest.approx([0.01, 0.01, 0.02, 0.02])


def exp(chunk_us: float = 0.0, request_ms: float = 0.1, **extra):
    w = {"num_prompts": 256, "input_len": 64, "output_len": 32, "request_rate": float("inf")}
    engine = {"tp": 4, "max_num_seqs": 256, "async_scheduling": False}
    engine.update(extra.pop("engine", {}))
    w.update(extra.pop("workload", {}))
    return experiment_from_dict({
        "engine": engine, "model": {"quantization": "nvfp4"},
        "speculative": {"num_speculative_tokens": 0}, "workload": w,
        "calibration": {"frontend_ms_per_request": request_ms, "frontend_us_per_chunk": chunk_us}})


def test_slow_streaming_lifts_tpot_of_many_requests_in_flight():
    base = simulate(exp(0.0), "no_mtp").metrics
    slow = simulate(exp(500.0), "no_mtp").metrics
    # 256 chunks x 0.5 ms = 128 ms a step of streaming, far above a decode step at 256 requests
    assert slow["median_tpot_ms"] > 100 > base["median_tpot_ms"]
    assert slow["median_tpot_ms"] == pytest.approx(128, rel=0.15)
    assert slow["completed"] == base["completed"]


def test_streaming_is_not_modelled_under_a_concurrency_limit():
    a = simulate(exp(500.0, workload={"max_concurrency": 16}), "no_mtp").metrics
    b = simulate(exp(0.0, workload={"max_concurrency": 16}), "no_mtp").metrics
    assert a["median_tpot_ms"] == b["median_tpot_ms"]


def test_one_api_server_for_all_dp_ranks_queues_the_whole_burst():
    dp = {"tp": 1, "dp": 4, "ep": True}
    default = exp(0.0, engine=dp)
    one = exp(0.0, engine={**dp, "api_server_count": 1})
    assert api_servers(default) == 4 and api_servers(one) == 1
    d = simulate(exp(0.0, 20.0, engine=dp), "no_mtp")
    o = simulate(exp(0.0, 20.0, engine={**dp, "api_server_count": 1}), "no_mtp")
    # 256 requests at 20 ms: one server takes 5.1 s, four take 1.3 s
    assert o.metrics["p99_ttft_ms"] > 4500 > 1500 > d.metrics["p99_ttft_ms"]
