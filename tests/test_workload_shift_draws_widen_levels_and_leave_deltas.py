"""`--uncertainty` with a `[calibration] file` multiplies every step cost by one lognormal
workload-shift factor per draw, shared by all policies: its spread is the file's SD (a known
truth), levels widen by it, the policy deltas stay where they were within Monte Carlo error, and
the term shows in the notes, the sensitivity table and the JSON."""

import dataclasses
import math

import numpy as np
import pytest

from mtpsim.calibration.schema import read_calibration
from mtpsim.calibration.shift import WorkloadShift
from mtpsim.spec import load_experiment
from mtpsim.uncertainty.draws import ShiftedCost, plan, run_draw, shift_factors
from mtpsim.uncertainty.run import propagate
from mtpsim.uncertainty.summary import delta_values

EXP = "experiments/heldout/v12/in-k4-ctx400-conc2.toml"
SMALL = ["workload.num_prompts=8", "workload.rounds=2"]
CAL = read_calibration("experiments/heldout/v12/calibration.json")


def with_sd(decode: float, prefill: float):
    return dataclasses.replace(CAL, workload_shift=WorkloadShift(decode, prefill, "prior", "test"))


def test_the_factors_log_spread_is_the_calibrations_sd():
    exp = load_experiment(EXP, SMALL)
    cal = with_sd(0.2, 0.05)
    f = np.array([shift_factors(cal, d) for d in plan(exp, 512, shift=True)])
    assert np.std(np.log(f[:, 0])) == pytest.approx(0.2, rel=0.03)
    assert np.std(np.log(f[:, 1])) == pytest.approx(0.05, rel=0.03)
    assert abs(np.mean(np.log(f[:, 0]))) < 0.01  # centred: the fit's own level is the median


def test_decode_only_and_prefill_steps_take_their_own_factor():
    class Flat:
        def step(self, shape):
            return {"verify": np.ones(3)}

    shape = type("S", (), {"prefill_tokens": np.array([0, 400, 0])})()
    out = ShiftedCost(Flat(), 1.5, 0.5).step(shape)
    assert out["verify"].tolist() == [1.5, 0.5, 1.5]


def test_a_draws_factor_scales_every_policys_timings_by_exactly_that_much():
    exp = load_experiment(EXP, SMALL)
    cal = with_sd(0.2, 0.2)
    d = plan(exp, 2, replicates=len(CAL.bootstrap), shift=True)[0]
    a = run_draw(exp, dataclasses.replace(d, shift=0.0), cal)
    b = run_draw(exp, dataclasses.replace(d, shift=1.0), cal)
    for p in ("fresh", "share"):
        assert b[p]["median_tpot_ms"] / a[p]["median_tpot_ms"] == pytest.approx(math.exp(0.2))
        assert b[p]["output_throughput"] / a[p]["output_throughput"] == pytest.approx(math.exp(-0.2))
        assert b[p]["spec_decode_acceptance_length"] == a[p]["spec_decode_acceptance_length"]


def test_levels_widen_and_deltas_stay_within_monte_carlo_error():
    exp = load_experiment(EXP, SMALL)
    draws = plan(exp, 24, replicates=len(CAL.bootstrap), shift=True)
    off = [run_draw(exp, d, with_sd(0.0, 0.0)) for d in draws]
    on = [run_draw(exp, d, with_sd(0.15, 0.09)) for d in draws]
    lv = {name: np.log([v["fresh"]["median_tpot_ms"] for v in vals]) for name, vals in
          (("off", off), ("on", on))}
    assert np.std(lv["on"]) > 1.5 * np.std(lv["off"])
    for m in ("output_throughput", "median_tpot_ms"):
        d_off, d_on = delta_values(off, "share", "fresh", m), delta_values(on, "share", "fresh", m)
        se = np.std(d_off) / math.sqrt(len(d_off))  # MC SE of the mean delta
        assert abs(np.mean(d_on) - np.mean(d_off)) < 2 * se, m
        assert np.std(d_on) < 1.25 * np.std(d_off) + 0.05, m


def test_the_term_is_listed_in_the_notes_the_sensitivity_and_the_json():
    run = propagate(EXP, SMALL, 8, 1, calibration=with_sd(0.15, 0.09))
    assert any(n.startswith("workload shift: step costs x lognormal, SD 15.0 %") for n in run.notes)
    assert "workload shift" in {s.param for s in run.sensitivity()}
    js = run.to_json()
    assert js["workload_shift"]["decode_sd"] == 0.15
    assert all(d["shift_score"] is not None for d in js["draws"])
