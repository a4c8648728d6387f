"""The v11 campaign's pre-registered verdicts: the issue's "Must show" criteria decide pass or fail
from the scored values (one failed criterion fails the campaign), and the penalty default goes to
a form only when it beats zero penalty with a 95 % CI wholly above 0."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import campaign_v11 as v11  # noqa: E402

from mtpsim.uncertainty.scoring import LEVELS, Scored, report, z_of  # noqa: E402


def _values(bias: float, rel_sd: float = 0.04, n: int = 40) -> list[Scored]:
    """Levels whose reals scatter around a prediction (off by `bias`) with the predicted spread."""
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        metric = v11.METRICS[i % 3]
        med = 100.0 + i
        qs = {0.5: med}
        for L in LEVELS:
            h = z_of(L) * rel_sd * med
            qs[round((1 - L) / 2, 6)], qs[round(1 - (1 - L) / 2, 6)] = med - h, med + h
        real = med * (1 + bias + rel_sd * rng.standard_normal())
        out.append(Scored(f"c{i // 6}", "fresh", metric, real, qs, inside=True))
    return out


def test_calibrated_predictions_pass_and_biased_ones_fail():
    good = _values(0.0)
    verdict = v11.judge(report(good), good)
    assert verdict["criteria"]["coverage_90_model_alone"]["ok"]
    assert verdict["criteria"]["above_median"]["ok"]
    bad = _values(0.25)  # every real value 25 % above its prediction (v10's slow-side misses)
    verdict = v11.judge(report(bad), bad)
    assert not verdict["passed"]
    assert not verdict["criteria"]["coverage_90_model_alone"]["ok"]
    assert not verdict["criteria"]["above_median"]["ok"]


def test_half_width_limit_fails_wide_intervals():
    wide = _values(0.0, rel_sd=0.2)
    crit = v11.judge(report(wide), wide)["criteria"]
    assert not crit["half_width_inside_median_tpot_ms"]["ok"]
    assert crit["half_width_inside_median_tpot_ms"]["value_pct"] > 12


def _forms(**cis) -> dict:
    return {"forms": {f: {"all": {"mean": (lo + hi) / 2, "ci95": [lo, hi]}} for f, (lo, hi) in cis.items()}}


def test_penalty_default_goes_to_zero_unless_a_form_clearly_beats_it():
    none = v11.penalty_verdict(_forms(kappa=(-0.02, 0.01), kappa_lk=(-0.01, 0.004)))
    assert none["winner"] == "zero penalty"
    won = v11.penalty_verdict(_forms(kappa=(0.001, 0.01), kappa_lk=(0.002, 0.03), kappa_step=(-0.1, 0.2)))
    assert won["winner"] == "kappa_lk" and won["forms_beating_zero"] == ["kappa", "kappa_lk"]
