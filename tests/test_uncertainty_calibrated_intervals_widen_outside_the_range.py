"""A calibration's bootstrap refits carry its uncertainty; a prediction outside what it saw (k,
context, machine) is flagged and its intervals widen with the distance."""

import dataclasses
import json

import numpy as np
import pytest
from _synthetic_traces import KAPPA, make_trace

from mtpsim.calibration.fit import fit_traces
from mtpsim.calibration.schema import read_calibration
from mtpsim.uncertainty.bootstrap import with_bootstrap
from mtpsim.uncertainty.domain import machine_info
from mtpsim.uncertainty.run import propagate

EXP = """
seed = 5
policies = ["fresh", "share"]
[engine]
scheduler = "reference"
max_num_seqs = 8
[speculative]
num_speculative_tokens = 3
index_topk = 64
[workload]
num_prompts = 10
input_len = 800
output_len = 60
max_concurrency = 4
[reference]
device = "cpu"
threads = 1
[calibration]
file = "cal.json"
"""


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    d = tmp_path_factory.mktemp("cal")
    traces = [make_trace("fresh", 1, n_requests=40), make_trace("share", 2, n_requests=40)]
    cal = with_bootstrap(fit_traces(traces), traces, 4, seed=0)
    here = {k: v for k, v in machine_info("cpu", 1).items() if k in ("cpu", "threads")}
    dataclasses.replace(cal, machine=here).write(d / "cal.json")
    dataclasses.replace(cal, machine={"cpu": "Some Other CPU", "threads": 1}).write(d / "other.json")
    (d / "exp.toml").write_text(EXP)
    return d


def test_bootstrap_refits_vary_around_the_truth_and_round_trip(calibrated):
    cal = read_calibration(calibrated / "cal.json")
    kappas = [b["acceptance"]["kappa"] for b in cal.bootstrap]
    assert len(kappas) == 4 and len(set(kappas)) == 4
    assert 0.5 * KAPPA < float(np.median(kappas)) < 2 * KAPPA
    gaps = {json.dumps(b["cost"]["phases"]["verify"]["coef"]) for b in cal.bootstrap}
    assert len(gaps) > 1  # step blocks resampled: the cost refits differ too
    assert cal.machine["threads"] == 1


def _width(run, metric="output_throughput"):
    iv = run.summary()["metrics"]["fresh"][metric]
    return (iv.hi - iv.lo) / iv.median


def test_inside_the_range_nothing_is_flagged(calibrated):
    run = propagate(str(calibrated / "exp.toml"), [], 6)
    assert not run.extrapolation.flagged and run.replicates == 4
    assert {d.replicate for d in run.draws} == {0, 1, 2, 3}


def test_longer_context_and_larger_k_widen_the_intervals(calibrated):
    inside = propagate(str(calibrated / "exp.toml"), [], 8)
    far = propagate(str(calibrated / "exp.toml"),
                    ["workload.input_len=6000", "speculative.num_speculative_tokens=5"], 8)
    notes = " ".join(far.extrapolation.notes)
    assert "k 5 outside 3" in notes and "context" in notes
    assert far.spread.time > inside.spread.time and far.spread.accept > inside.spread.accept
    assert far.spread.effect > inside.spread.effect == 0
    assert _width(far) > 1.5 * _width(inside)


def test_another_machine_is_flagged_with_a_wide_timing_term(calibrated):
    run = propagate(str(calibrated / "exp.toml"), ['calibration.file="other.json"'], 6)
    assert run.extrapolation.machine_differs
    assert any("machine differs: cpu" in n for n in run.extrapolation.notes)
    assert run.spread.time >= 0.4
