"""`mtpsim simulate` of a bursty workload (`workload.burstiness = 1e-3`, 64 requests at 1/s, the
PR's experiment) never ended: the engine idled until the next send at t, the clock's wait was
`t - now` and `now` then fell an ulp short of t (`_t + (t - _t) < t` when t is more than twice
`_t`), so the send never came due and the loop waited again, forever (killed after 10 minutes).
Now a wait counts from the last step's end and is rounded up, so `now()` reaches t: that run
takes about 3 s."""

import subprocess
import sys

import pytest
from _cli import ROOT

from mtpsim.sim.clock import Clock, StepLog


def test_a_wait_reaches_its_time_where_the_sum_rounds_down():
    t_step, t_send = 10.044771168669662, 98.56773590285052
    assert t_step + (t_send - t_step) < t_send  # the case: the sum rounds down
    clock = Clock(None, None, StepLog({}))
    clock._t = t_step  # the last step ended here
    clock.wait_until(t_send)
    reached = clock.now()
    assert t_send <= reached <= t_send + 1e-12
    clock.wait_until(t_send)  # a second wait for the same send changes nothing
    clock.wait_until(50.0)  # nor does an earlier time
    assert clock.now() == reached


@pytest.mark.timeout(300)
def test_simulate_of_a_bursty_workload_ends():
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", "experiments/pr47352.toml",
                        "--set", "workload.request_rate=1", "--set", "workload.burstiness=1e-3",
                        "--set", "policies=[\"fresh\"]", "--set", "workload.num_prompts=64"],
                       capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert r.returncode == 0, r.stderr
    assert "Median TTFT" in r.stdout
