"""Conditioning treats one measured row's figures as one run's: throughput and TPOT errors are
drawn together (a fast run shows both), so a draw that misses both the way one fast run would is
likelier than one that misses them in contradiction; and the run prints how the verdict moves
with the assumed run-to-run timing noise (1-4 %)."""

from __future__ import annotations

import numpy as np
import pytest

from mtpsim.uncertainty.posterior import NoiseModel, loglik


def _draw(thr: float, tpot: float) -> dict:
    return {"fresh": {"output_throughput": thr, "median_tpot_ms": tpot,
                      "spec_decode_acceptance_length": 2.8}}


ROW = {"fresh": {"output_throughput": 100.0, "median_tpot_ms": 20.0, "spec_decode_acceptance_length": 2.8}}


def test_a_consistent_miss_is_likelier_than_a_contradictory_one_when_correlated():
    consistent = _draw(102.0, 20.0 / 1.02)  # 2 % faster on both
    contradictory = _draw(102.0, 20.0 * 1.02)  # faster throughput, slower TPOT
    corr = NoiseModel(0.02, 0.02, "test", timing_corr=0.8)
    indep = NoiseModel(0.02, 0.02, "test")
    ll_c = loglik([consistent, contradictory], ROW, corr)
    ll_i = loglik([consistent, contradictory], ROW, indep)
    assert ll_i[0] == pytest.approx(ll_i[1])  # independence cannot tell them apart
    assert ll_c[0] - ll_c[1] == pytest.approx(0.5 * (3.6 - 0.4) / 0.36, rel=3e-2)  # Mahalanobis 10 vs 1.1


def test_the_correlation_matrix_signs_follow_what_a_fast_run_does():
    c = NoiseModel(0.02, 0.02, "t", timing_corr=0.8, acceptance_corr=0.3).corr(
        ("output_throughput", "median_tpot_ms", "spec_decode_acceptance_length"))
    assert c[0, 1] == -0.8 and c[0, 2] == 0.3 and c[1, 2] == -0.3
    assert np.all(np.linalg.eigvalsh(c) > 0)


def test_pr47352_prints_its_verdict_under_1_to_4_percent_timing_noise():
    from mtpsim.uncertainty.run import propagate

    run = propagate("experiments/pr47352.toml", [], 16, 1)
    rows = run.noise_sensitivity()
    assert [r["timing_noise_pct"] for r in rows] == [0.5, 1.0, 2.0, 3.0, 4.0]
    for r in rows:
        thr = r["output_throughput"]
        assert thr["lo"] <= thr["median"] <= thr["hi"] and thr["verdict"]
    # noisier rows constrain less: the draws spread their weight more evenly
    assert rows[-1]["effective_draws"] > rows[0]["effective_draws"]


def test_the_noise_rows_print_their_mc_se_and_flag_those_not_held_to_the_target():
    """The rows re-weight the assumed noise's draws (not re-drawn to the 0.1 target): each prints
    its Monte Carlo SE, and one above the target is starred with a caption saying how to draw
    for that noise itself."""
    import io

    from rich.console import Console

    from mtpsim.report.uncertainty import noise_sensitivity_table
    from mtpsim.uncertainty.run import propagate

    run = propagate("experiments/pr47352.toml", ["uncertainty.max_draws=0"], 16, 1)
    rows = run.noise_sensitivity()
    assert all(r["mc_se"] is not None and r["mc_se"] > 0 for r in rows)
    over = [r for r in rows if r["mc_se"] > run.exp.uncertainty.mc_se_target]
    assert over  # 16 prior draws cannot hold any end to 0.1 points
    buf = io.StringIO()
    Console(file=buf, width=140, color_system=None).print(noise_sensitivity_table(run))
    text = " ".join(buf.getvalue().split())  # the caption wraps
    assert "MC SE" in text and f"{over[0]['mc_se']:.2f}*" in text
    assert "timing_noise_pct" in text and "not held to it" in text
