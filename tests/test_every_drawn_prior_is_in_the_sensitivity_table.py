"""Every prior a draw can set is a first-class factor of the sensitivity analysis: it has a row in
the sensitivity table of any run that draws it, and it belongs to exactly one measurement group, so
`measure next` (simulate --uncertainty, advise) counts its variance share toward a measurement.
`calibration.gemm_efficiency` (issue #23) was drawn and tabled but counted toward no measurement."""

from mtpsim.uncertainty import sensitivity as sens
from mtpsim.uncertainty.draws import drawn_priors
from mtpsim.uncertainty.priors import PARAMS
from mtpsim.uncertainty.run import propagate


def test_every_prior_belongs_to_exactly_one_measurement():
    grouped = [p for params in sens.GROUPS.values() for p in params]
    missing = sorted(set(PARAMS) - set(grouped))
    assert not missing, f"priors no measurement pins: {missing}"
    twice = sorted({p for p in grouped if grouped.count(p) > 1})
    assert not twice, f"priors in two measurement groups: {twice}"


def test_the_gemm_rate_multiplier_is_pinned_with_the_other_efficiencies():
    off = sens.GROUPS["sharing-off row"]
    assert {"mem_efficiency", "compute_efficiency", "gemm_efficiency"} <= set(off)


def test_every_drawn_prior_has_a_row_in_a_runs_sensitivity_table():
    run = propagate("experiments/pr47352.toml", ["workload.num_prompts=8"], 8, 1)
    drawn = set(drawn_priors(run.exp))
    assert "gemm_efficiency" in drawn
    rows = {s.param for s in run.sensitivity()}
    assert drawn <= rows, f"drawn but not in the table: {sorted(drawn - rows)}"


def test_a_gemm_driven_delta_recommends_the_sharing_off_row():
    table = [sens.Sensitivity("gemm_efficiency", 0.9, 0.8),
             sens.Sensitivity("critical_entries", 0.1, 0.05),
             sens.Sensitivity("indexer_cost", 0.1, 0.05)]
    group, share, params = sens.measure_next(table)
    assert group == "sharing-off row"
    assert params[0] == "gemm_efficiency" and share == 0.8
