"""`calibrate` finds the efficiency factor that produced a measured row, and writes it back."""

import warnings
from pathlib import Path

import pytest

from mtpsim.calibration.factors import calibrate, with_factors
from mtpsim.sim.simulator import simulate
from mtpsim.spec import experiment_from_dict, load_experiment

RAW = {"engine": {"tp": 8, "max_num_seqs": 8}, "seed": 4,
       "workload": {"num_prompts": 16, "input_len": 4000, "output_len": 200, "max_concurrency": 8}}


def test_fit_recovers_the_bandwidth_efficiency_that_made_the_row():
    truth = simulate(with_factors(experiment_from_dict(RAW), {"mem_efficiency": 0.45}), "fresh")
    row = {k: truth.metrics[k] for k in ("output_throughput", "median_tpot_ms")}
    exp = experiment_from_dict({**RAW, "calibration": {
        "mem_efficiency": 0.8, "fit": ["mem_efficiency"], "measured": {"fresh": row}}})
    fit = calibrate(exp)
    assert fit.after["mem_efficiency"] == pytest.approx(0.45, rel=0.02)
    assert all(abs(e) < 0.01 for e in fit.relative_errors().values())
    assert fit.experiment.calibration.mem_efficiency == fit.after["mem_efficiency"]


def test_the_pr47352_factors_are_what_calibrate_finds():
    path = Path(__file__).resolve().parents[1] / "experiments" / "pr47352.toml"
    exp = load_experiment(path)
    fit = calibrate(exp)
    assert fit.after["mem_efficiency"] == pytest.approx(exp.calibration.mem_efficiency, rel=0.01)


def test_two_factors_are_recovered_and_ttft_separates_them_better_than_throughput():
    raw = {**RAW, "acceptance": {"mode": "expected"}}
    truth = simulate(with_factors(experiment_from_dict(raw),
                                  {"mem_efficiency": 0.45, "compute_efficiency": 0.3}), "fresh")
    conditions = {}
    for metrics in (("median_tpot_ms", "median_ttft_ms"), ("output_throughput", "median_tpot_ms")):
        exp = experiment_from_dict({**raw, "calibration": {
            "fit": ["mem_efficiency", "compute_efficiency"], "fit_metrics": list(metrics),
            "measured": {"fresh": {m: truth.metrics[m] for m in metrics}}}})
        fit = calibrate(exp)
        assert fit.after == pytest.approx({"mem_efficiency": 0.45, "compute_efficiency": 0.3},
                                          rel=0.01)
        conditions[metrics[1]] = fit.condition
    # throughput and TPOT move together (throughput ~ concurrency * output / E2EL)
    assert conditions["median_ttft_ms"] * 3 < conditions["median_tpot_ms"]



@pytest.mark.parametrize(("factor", "start", "truth"), [("overhead_ms", 0.0, 3.0),
                                                        ("mem_efficiency", 1.0, 0.45)])
def test_a_factor_that_starts_on_a_bound_is_still_fitted(factor, start, truth):
    row = simulate(with_factors(experiment_from_dict(RAW), {factor: truth}), "fresh")
    exp = experiment_from_dict({**RAW, "calibration": {
        factor: start, "fit": [factor], "fit_metrics": ["median_tpot_ms"],
        "measured": {"fresh": {"median_tpot_ms": row.metrics["median_tpot_ms"]}}}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # np.log(0) warned "divide by zero" on stderr
        fit = calibrate(exp)
    assert fit.after[factor] == pytest.approx(truth, rel=0.02)
