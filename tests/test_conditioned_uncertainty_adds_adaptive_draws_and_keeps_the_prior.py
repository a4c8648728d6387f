"""Conditioning on measured rows adds adaptive importance-sampling stages after the prior draws
(until the timing-delta ends' MC SE meets `uncertainty.mc_se_target` or `max_draws`), while the
prior-only intervals stay those of the N prior draws; too few prior draws to fit a proposal and
nothing is added."""

from __future__ import annotations

import numpy as np

from mtpsim.report.uncertainty import mc_line
from mtpsim.uncertainty.adaptive import MIN_PILOT
from mtpsim.uncertainty.run import ALL_ROWS, PRIOR, propagate

BODY = """
seed = 5
policies = ["fresh", "share"]
[engine]
tp = 8
max_num_seqs = 8
[workload]
num_prompts = 8
input_len = 2000
output_len = 48
max_concurrency = 4
[uncertainty]
acceptance_noise = 0.05
[calibration.measured.fresh]
output_throughput = 900.0
median_tpot_ms = 9.0
spec_decode_acceptance_length = 2.6
"""


def _exp(tmp_path):
    p = tmp_path / "exp.toml"
    p.write_text(BODY)
    return str(p)


def test_stages_follow_the_prior_draws_and_the_prior_summary_is_unchanged(tmp_path):
    p = _exp(tmp_path)
    run = propagate(p, ["uncertainty.max_draws=96", "uncertainty.mc_se_target=0.0001"], 32, jobs=1)
    plain = propagate(p, ["uncertainty.max_draws=0"], 32, jobs=1)
    assert run.sampler()["stages"] == [32, 32, 32] and len(run.draws) == 96
    assert plain.sampler()["stages"] == [32] and len(plain.draws) == 32
    assert [d.seed for d in run.draws[:32]] == [d.seed for d in plain.draws]
    assert len({d.seed for d in run.draws}) == 96  # every draw its own simulation seed
    a = run.summary(PRIOR)["deltas"]["share"]["output_throughput"]
    b = plain.summary(PRIOR)["deltas"]["share"]["output_throughput"]
    assert (a.median, a.lo, a.hi) == (b.median, b.lo, b.hi)
    w = run.weights[ALL_ROWS]
    assert len(w) == 96 and np.isclose(w.sum(), 1) and np.all(w >= 0)
    assert any("above the 0.0001 target" in n for n in run.notes)
    assert "32 prior + 64 adaptive importance-sampling draws" in mc_line(run)
    assert run.to_json()["sampler"]["stages"] == [32, 32, 32]


def test_a_met_target_adds_nothing_and_a_small_pilot_adds_nothing(tmp_path):
    p = _exp(tmp_path)
    met = propagate(p, ["uncertainty.mc_se_target=1000"], 32, jobs=1)
    assert len(met.draws) == 32 and met.design is not None and len(met.design.stages) == 1
    small = propagate(p, ["uncertainty.mc_se_target=0.0001"], MIN_PILOT - 1, jobs=1)
    assert len(small.draws) == MIN_PILOT - 1 and small.design is None
    assert f"--uncertainty {MIN_PILOT} or more adds adaptive" in mc_line(small)
