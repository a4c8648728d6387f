"""Draws cover their priors quasi-randomly and change the spec exactly as `--set` would."""

import math
from pathlib import Path

import numpy as np

from mtpsim.spec import load_experiment
from mtpsim.uncertainty.draws import drawn_priors, plan, with_draw
from mtpsim.uncertainty.priors import PARAMS, parse_prior

PR = Path(__file__).resolve().parents[1] / "experiments" / "pr47352.toml"
HELDOUT = Path(__file__).resolve().parents[1] / "experiments" / "heldout" / "k2-conc4.toml"


def test_a_loguniform_prior_spreads_evenly_in_log_space():
    exp = load_experiment(PR, ['uncertainty.priors.critical_entries="loguniform(4, 64)"'])
    draws = plan(exp, 64)
    x = np.log2([d.values["critical_entries"] for d in draws])
    assert x.min() >= 2 and x.max() <= 6
    # quasi-random: every quarter of [2, 6] in log2 holds 16 +- 2 of the 64 draws
    counts = np.histogram(x, bins=4, range=(2, 6))[0]
    assert np.all(np.abs(counts - 16) <= 2), counts


def test_a_draw_equals_the_same_values_given_with_set():
    exp = load_experiment(PR)
    d = plan(exp, 4)[2]
    by_set = load_experiment(PR, [*d.overrides_for_set(), f"seed={d.seed}"])
    assert with_draw(exp, d) == _without(by_set, "overrides")


def _without(exp, *fields):
    import dataclasses

    return dataclasses.replace(exp, **{f: () for f in fields})


def test_fixed_priors_are_not_drawn_and_a_calibration_file_replaces_the_model_priors():
    exp = load_experiment(PR, ['uncertainty.priors.indexer_cost="fixed"'])
    assert "indexer_cost" not in drawn_priors(exp) and "critical_entries" in drawn_priors(exp)
    assert drawn_priors(load_experiment(HELDOUT)) == {}  # its bootstrap refits stand in


def test_every_shipped_default_prior_is_valid_for_its_field():
    for name, p in PARAMS.items():
        prior = parse_prior(p.default, p)
        assert p.source, name
        if prior.kind == "fixed":  # not drawn unless a spec or preset gives it a range
            continue
        lo, hi = prior.ppf(1e-6), prior.ppf(1 - 1e-6)
        assert p.lo <= lo < hi <= p.hi and math.isfinite(hi), name
        assert p.source, name
