"""`simulate experiments/pr47352.toml --set workload.request_rate=1e-12` ran, exit 0, and printed
a P90 TTFT of 301 s and ITLs of exactly 7.81 / 15.62 ms (1/128 s): the arrivals span
num_prompts / request_rate = 2.6e14 s, where the simulated clock (float seconds) has a
resolution of 1/64 s. Now arrivals spanning more than 1e7 s (116 days) are one line, exit 2,
naming where the rate came from; up to there the figures agree with an unloaded server's to
0.01 %."""

import pytest
from _cli import one_error_line

from mtpsim.errors import SpecError
from mtpsim.spec import experiment_from_dict


def test_a_rate_whose_arrivals_outlast_the_clocks_precision_is_one_line():
    line = one_error_line("simulate", "experiments/pr47352.toml", "--set",
                          "workload.request_rate=1e-12", quiet_stdout=True)
    assert line.startswith("error: --set: workload.request_rate: expected arrivals within "
                           "10,000,000 s"), line
    assert "256 requests at 1e-12/s, 2.56e+14 s" in line


def test_the_bound_is_on_the_span_and_names_the_file_that_set_it():
    def spec(n: int, rate: float) -> dict:
        return {"workload": {"num_prompts": n, "request_rate": rate, "input_len": 64,
                             "output_len": 16}}

    experiment_from_dict(spec(100, 1e-5))  # 1e7 s: accepted
    with pytest.raises(SpecError) as e:
        experiment_from_dict(spec(101, 1e-5), source="my.toml")
    assert e.value.message().startswith("my.toml: workload.request_rate: expected arrivals "
                                        "within"), e.value.message()
