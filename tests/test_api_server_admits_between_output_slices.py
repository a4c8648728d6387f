"""One API-server event loop admits requests and streams the steps' outputs (vLLM 0.33.0
`v1/engine/async_llm.py`: `add_request` on the loop, `_run_output_handler` in slices of 128
with `asyncio.sleep(0)` between): admissions wait while the loop works through output slices, so
a burst whose running requests stream every step reaches the engine later than one whose
requests stream a few tokens; with no streaming it is the old FIFO queue."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mtpsim.sim.frontend import ApiServerLoop, frontend_queue, streamed_times
from mtpsim.sim.simulator import Simulator
from mtpsim.spec import experiment_from_dict

ROOT = Path(__file__).resolve().parents[1]


def admit_all(loop: ApiServerLoop, step_s: float, chunks: float, steps: int) -> list[float]:
    """Feed the loop `steps` steps of `step_s` each, `chunks` outputs each, and release every
    admission; the admission times."""
    t, got = 0.0, []
    for _ in range(steps):
        got += [t_ for _, t_ in [(r, loop.admitted[r]) for r, _ in loop.send_until(t)]]
        t += step_s
        loop.on_steps(np.array([t]), np.array([chunks]))
    got += [loop.admitted[r] for r, _ in loop.send_until(np.inf)]
    return got


def test_without_streaming_the_admissions_are_the_fifo_queue():
    rng = np.random.default_rng(3)
    sends = np.sort(rng.exponential(0.02, 50).cumsum())
    loop = ApiServerLoop(sends, 1, 1, 0.015, 0.0)
    got = admit_all(loop, 0.05, 300, 80)
    assert got == pytest.approx(frontend_queue(sends, 0.015).tolist(), abs=1e-12)


@pytest.mark.parametrize("servers", [1, 4])
def test_under_dp_the_loop_admits_its_servers_share_and_reports_the_other_ranks(servers):
    sends = np.zeros(16)
    loop = ApiServerLoop(sends, 4, servers, 0.01, 0.0)
    got = loop.send_until(1.0)
    assert [r for r, _ in got] == [0, 1, 2, 3]  # the simulated rank: requests 0, 4, 8, 12
    assert [loop.admitted[4 * r // servers] for r, _ in got] == pytest.approx(
        frontend_queue(sends, 0.01, servers)[::4].tolist())  # the old queue, exactly
    reported = sorted(i for _, ids in loop.others for i in ids)
    assert reported == [i for i in range(16) if i % 4]  # every other rank's request, once


def test_admissions_take_turns_with_output_slices():
    loop = ApiServerLoop(np.zeros(3), 1, 1, 1.0, 0.01)
    loop.on_steps(np.array([0.0]), np.array([256.0]))  # two slices of 128 chunks, 1.28 s each
    assert loop.next_send_s() == pytest.approx(2.28)  # slice, then the first admission
    assert [s for _, s in loop.send_until(10.0)] == [0.0, 0.0, 0.0]
    assert loop.admitted == pytest.approx([2.28, 4.56, 5.56])  # slice, admission, slice, ...
    times = np.array([0.0, 0.0])
    assert loop.seen(times, np.array([256.0])) == pytest.approx([0.0, 3.56])


def test_a_look_ahead_leaves_the_loop_as_it_was():
    loop = ApiServerLoop(np.zeros(5), 1, 1, 0.01, 0.001)
    loop.on_steps(np.array([0.05]), np.array([200.0]))
    before = (loop.free, loop.head, loop.left, list(loop.admitted), list(loop.visible))
    ahead = loop.next_send_s(np.array([0.1, 0.15]), np.array([300.0, 300.0]))
    assert loop.next_send_s(np.array([0.1, 0.15]), np.array([300.0, 300.0])) == ahead
    assert (loop.free, loop.head, loop.left, list(loop.admitted), list(loop.visible)) == before


def test_streaming_every_step_slows_admission_of_a_burst():
    # 200 requests at 5 ms each; steps of 20 ms with 400 outputs of 100 µs (40 ms of streaming
    # a step, four slices) against steps with 4 outputs
    busy = admit_all(ApiServerLoop(np.zeros(200), 1, 1, 0.005, 1e-4), 0.02, 400, 400)
    light = admit_all(ApiServerLoop(np.zeros(200), 1, 1, 0.005, 1e-4), 0.02, 4, 400)
    assert light[-1] == pytest.approx(1.0, rel=0.05)  # the admission work alone, nearly
    assert busy[-1] > 2 * light[-1]


def test_once_everyone_is_admitted_the_streaming_is_the_old_one():
    loop = ApiServerLoop(np.zeros(1), 1, 1, 0.001, 0.002)
    times = np.array([0.0, 0.01, 0.02, 0.03])
    chunks = np.array([0.0, 10.0, 10.0])
    loop.on_steps(times[1:], chunks)
    assert loop.seen(times, chunks) == pytest.approx(streamed_times(times, chunks, 0.002))


def exp(output_len: int, chunk_us: float = 200.0):
    w = {"num_prompts": 256, "input_len": 64, "output_len": output_len,
         "request_rate": float("inf")}
    return experiment_from_dict({
        "engine": {"tp": 4, "max_num_seqs": 256, "async_scheduling": False},
        "model": {"quantization": "nvfp4"}, "speculative": {"num_speculative_tokens": 0},
        "workload": w,
        "calibration": {"frontend_ms_per_request": 2.0, "frontend_us_per_chunk": chunk_us}})


def last_admission(e) -> float:
    sim = Simulator(e, "no_mtp", records=False)
    sim.run()
    return max(sim.frontend.admitted)


def test_a_burst_streaming_every_step_reaches_the_engine_later_than_one_of_four_tokens():
    long, short = last_admission(exp(200)), last_admission(exp(4))
    # 256 requests at 2 ms: 0.51 s of admission work; four tokens leave the loop mostly to it,
    # 200 tokens each keep it streaming (~50 ms of chunks a step) while the burst waits
    assert 256 * 2e-3 < short < 1.5 * 256 * 2e-3
    assert long > 3 * short
    # without streaming cost, the two bursts are admitted alike: FIFO at 2 ms each
    assert last_admission(exp(200, 0.0)) == pytest.approx(last_admission(exp(4, 0.0)))
    assert last_admission(exp(200, 0.0)) == pytest.approx(256 * 2e-3)


def test_the_prior_fit_refuses_a_test_row():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "frontend_prior_fit.py"),
                        "--rows", "gpustack-h200-vllm-tp8-random128x4"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "is a test row" in r.stderr
