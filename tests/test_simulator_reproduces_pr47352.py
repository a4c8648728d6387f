"""Calibrated on the PR's sharing-off row, the simulated sharing-off row matches it within the
stated tolerances, and sharing-on is priced without the draft indexer."""

from pathlib import Path

import pytest

from mtpsim.sim.simulator import simulate
from mtpsim.spec import load_experiment

EXP = Path(__file__).resolve().parents[1] / "experiments" / "pr47352.toml"


@pytest.fixture(scope="module")
def results():
    exp = load_experiment(EXP)
    return exp, {p: simulate(exp, p) for p in exp.policies}


def test_sharing_off_matches_the_measured_row(results):
    exp, res = results
    sim, real = res["fresh"].metrics, exp.calibration.measured["fresh"]
    assert sim["output_throughput"] == pytest.approx(real["output_throughput"], rel=0.03)
    assert sim["median_tpot_ms"] == pytest.approx(real["median_tpot_ms"], rel=0.05)
    assert sim["spec_decode_acceptance_length"] == pytest.approx(
        1 + real["spec_decode_accepted_tokens"] / real["spec_decode_num_drafts"], abs=0.02)
    assert sim["spec_decode_num_drafts"] == pytest.approx(real["spec_decode_num_drafts"], rel=0.02)
    assert sim["total_output_tokens"] == 256 * 2048


def test_simulated_counters_obey_vllms_identities(results):
    _, res = results
    m = res["share"].metrics
    assert m["spec_decode_acceptance_length"] == pytest.approx(
        1 + m["spec_decode_accepted_tokens"] / m["spec_decode_num_drafts"])
    assert m["spec_decode_acceptance_length"] == pytest.approx(
        1 + sum(m["spec_decode_per_position_acceptance_rates"]), abs=1e-4)
    assert m["spec_decode_draft_tokens"] == 3 * m["spec_decode_num_drafts"]


def test_sharing_on_saves_the_draft_indexer_and_leaves_step_0_alone(results):
    _, res = results
    off, on = res["fresh"], res["share"]
    assert off.phases["draft_decode_indexer"] > 0 == on.phases["draft_decode_indexer"]
    pos_off = off.metrics["spec_decode_per_position_acceptance_rates"]
    pos_on = on.metrics["spec_decode_per_position_acceptance_rates"]
    assert pos_on[0] == pytest.approx(pos_off[0], abs=0.002)  # common random numbers
    assert pos_on[2] < pos_off[2]
