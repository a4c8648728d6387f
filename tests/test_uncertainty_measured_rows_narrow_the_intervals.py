"""Conditioning on a measured row narrows the intervals around the truth, and a --set that
changes the measured setup switches conditioning off (the row no longer describes it)."""

import dataclasses

from mtpsim.sim.simulator import simulate
from mtpsim.spec import load_experiment
from mtpsim.uncertainty.run import ALL_ROWS, PRIOR, propagate

FIXED = ["critical_entries", "overlap_agreement", "overlap_step_exponent", "target_agreement",
         "request_sigma", "compute_efficiency", "comm_efficiency", "overhead_ms",
         "eager_overhead_ms", "kernel_floor_us", "indexer_cost"]
BODY = """
seed = 3
policies = ["fresh", "share"]
[engine]
tp = 8
max_num_seqs = 8
[workload]
num_prompts = 12
input_len = 3000
output_len = 64
max_concurrency = 4
[uncertainty]
acceptance_noise = 0.05  # 12 short requests: acceptance length moves by ~0.05 between seeds
timing_noise_pct = 4.0
[uncertainty.priors]
mem_efficiency = "uniform(0.2, 0.9)"
""" + "".join(f'{n} = "fixed"\n' for n in FIXED)


def _experiment(tmp_path):
    p = tmp_path / "exp.toml"
    p.write_text(BODY)
    truth = dataclasses.replace(load_experiment(p), seed=99)
    truth = dataclasses.replace(truth, calibration=dataclasses.replace(truth.calibration,
                                                                       mem_efficiency=0.45))
    row = simulate(truth, "fresh").metrics
    measured = {k: row[k] for k in ("output_throughput", "median_tpot_ms",
                                    "spec_decode_acceptance_length")}
    p.write_text(BODY + "[calibration.measured.fresh]\n"
                 + "".join(f"{k} = {v!r}\n" for k, v in measured.items()))
    return p, measured


def test_a_measured_row_narrows_the_interval_and_keeps_the_truth_inside(tmp_path):
    p, measured = _experiment(tmp_path)
    run = propagate(str(p), [], 16, jobs=1)
    assert ALL_ROWS in run.weights and "fresh row" in run.weights
    before = run.summary(PRIOR)["metrics"]["fresh"]["output_throughput"]
    after = run.summary(ALL_ROWS)["metrics"]["fresh"]["output_throughput"]
    assert after.hi - after.lo < 0.5 * (before.hi - before.lo)
    assert after.lo <= measured["output_throughput"] <= after.hi
    assert len(run.draws) == 16 and run.noise is not None


def test_a_set_that_changes_the_measured_setup_turns_conditioning_off(tmp_path):
    p, _ = _experiment(tmp_path)
    run = propagate(str(p), ["workload.max_concurrency=2"], 4, jobs=1)
    assert not run.weights and len(run.draws) == 4
    assert any("measured rows not used" in n for n in run.notes)
