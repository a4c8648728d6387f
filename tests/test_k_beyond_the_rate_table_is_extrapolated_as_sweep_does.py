"""A k set by --set beyond the spec's acceptance table is run as `sweep` runs a swept k: the last
conditional rate repeated, and a note that says so (simulate and run-real refused what sweep ran).
Rates the user gives, or a table that covers k, are left as they are."""

import pytest

from mtpsim.runs.simulate import simulate
from mtpsim.sweep import with_extended_acceptance

PR = "experiments/pr47352.toml"
K = "speculative.num_speculative_tokens"


def test_simulate_extends_the_table_and_says_so():
    run = simulate(PR, [f"{K}=5"], records=False)
    assert run.exp.k == 5 and len(run.exp.acceptance.per_position) == 5
    assert any(n.startswith("k=5: acceptance positions 3..4 extrapolated") for n in run.notes)
    cond = run.exp.acceptance.per_position
    assert cond[3] / cond[2] == pytest.approx(cond[4] / cond[3], rel=1e-4)  # the rate repeated


def test_nothing_changes_where_the_table_covers_k_or_rates_are_given():
    assert with_extended_acceptance(PR, [f"{K}=2"]) == ([f"{K}=2"], ())
    given = [f"{K}=4", "acceptance.per_position=[0.9, 0.6, 0.4, 0.2]"]
    assert with_extended_acceptance(PR, given) == (given, ())
    assert with_extended_acceptance(PR, ["seed=3"]) == (["seed=3"], ())


def test_the_largest_k_runs_with_far_rates_at_zero():
    """k = 53..64 is inside num_speculative_tokens' range, but the repeated rate's marginals fall
    below the numbers check's smallest magnitude there: they become 0, not a refusal that names a
    field the user never set."""
    run = simulate(PR, [f"{K}=64", "policies=[\"fresh\"]", "workload.num_prompts=4"], records=False)
    rates = run.exp.acceptance.per_position
    assert run.exp.k == 64 and len(rates) == 64
    assert rates[52] > 0 and rates[-1] == 0.0
    assert all(a >= b for a, b in zip(rates, rates[1:], strict=False))  # marginals never rise
