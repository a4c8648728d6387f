"""benchmarks/shape_development_v15.py (post-hoc development, docs/uncertainty.md §19): its verdict
is §19's rule as committed before the candidates ran, its candidates swap the pricing's own
binding of the features (§15's script did not), and they leave the fit as they found it."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import shape_development_v15 as v15  # noqa: E402

import mtpsim.calibration.fit as fit  # noqa: E402
import mtpsim.models.cost as cost  # noqa: E402
import mtpsim.models.fitted as fitted  # noqa: E402


def _row(v14=0.080, prefill=0.085, dense=0.054, r14=0.036, r13=0.099):
    return {"v14": {"decode_sd": v14, "prefill_sd": prefill}, "dense": {"decode_sd": dense},
            "v14_tests": {"decode": {"rms_log": r14}}, "v13_tests": {"decode": {"rms_log": r13}}}


def test_a_candidate_passes_only_if_every_check_holds_and_the_best_one_is_adopted():
    rows = {"as_shipped": _row(), "padded_indexer": _row(v14=0.055, dense=0.0589, r14=0.0409),
            "prompt_chunks": _row(v14=0.050, prefill=0.0951), "relative": _row(v14=0.054)}
    verdict = v15.judge(rows)
    assert verdict["candidates"]["padded_indexer"]["passes"]  # just inside each margin
    assert not verdict["candidates"]["prompt_chunks"]["passes"]  # prefill up by more than 0.010
    assert verdict["adopted"] == "relative"  # the lowest v14 decode SD among the passing
    worse = copy.deepcopy(rows)
    worse["relative"]["v13_tests"]["decode"]["rms_log"] = 0.1045
    worse["padded_indexer"]["v14"]["decode_sd"] = 0.0551
    assert v15.judge(worse)["adopted"] is None


@pytest.mark.parametrize("name", v15.CANDIDATES)
def test_every_candidate_restores_the_fit_and_the_pricing(name):
    before = (fit.step_quantities, fit.cost_features, cost.cost_features, fitted.cost_features,
              fit._nnls, fit.fit_cost)
    with pytest.raises(RuntimeError), v15.candidate(name):
        if "chunks" in name:  # the fit and the pricing both see the chunk features
            assert fitted.cost_features is fit.cost_features is not before[3]
        if "relative" in name:
            assert fit._nnls is not before[4]
        raise RuntimeError("interrupted")
    assert (fit.step_quantities, fit.cost_features, cost.cost_features, fitted.cost_features,
            fit._nnls, fit.fit_cost) == before
