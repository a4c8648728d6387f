"""Policy A/B: request-level bootstrap CIs and the position-0 placebo noise floor."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.compare import ab_compare, fidelity, mean_abs_pct_error
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result, load_result

UPSTREAM = "experiments/pr47352-upstream"


def synthetic(policy: str, cond: list[float], n: int, seed: int) -> Result:
    """n requests of 50 drafts each, with per-request acceptance probabilities jittered."""
    rng = np.random.default_rng(seed)
    reqs = []
    for j in range(n):
        p = np.clip(np.array(cond) + rng.normal(0, 0.05, len(cond)), 0, 1)
        acc = np.zeros(len(cond), int)
        total = 0
        for _ in range(50):
            k = 0
            while k < len(cond) and rng.random() < p[k]:
                k += 1
            acc[:k] += 1
            total += k
        out = 50 + total
        reqs.append(RequestRecord(f"r{j}", 100, out, 0.0, 0.1, 0.1 + 0.01 * 50, [0.01], [50],
                                  50, 50 * len(cond), total, acc.tolist()))
    return Result.from_requests(mode="reference", policy=policy, requests=reqs, duration_s=1.0)


def row(rep, key):
    return next(r for r in rep.rows if r.key == key)


def test_a_real_acceptance_drop_is_significant_and_clears_the_placebo():
    a = synthetic("fresh", [0.8, 0.7, 0.6], 120, seed=1)
    b = synthetic("share", [0.8, 0.5, 0.4], 120, seed=2)
    rep = ab_compare(a, b, num_boot=500)
    pos1 = row(rep, "pos1")
    assert pos1.significant and pos1.ci_high < 0
    assert rep.within_noise(pos1) is False
    assert row(rep, "spec_decode_acceptance_length").delta < 0


def test_identical_policies_give_a_ci_that_contains_zero():
    a = synthetic("fresh", [0.8, 0.7, 0.6], 120, seed=3)
    b = synthetic("share", [0.8, 0.7, 0.6], 120, seed=4)
    rep = ab_compare(a, b, num_boot=500)
    for key in ("pos0", "pos1", "pos2", "spec_decode_acceptance_length"):
        r = row(rep, key)
        assert r.ci_low <= 0 <= r.ci_high, key


def test_bootstrap_point_estimates_equal_the_aggregate_formulas():
    a = synthetic("fresh", [0.8, 0.7], 30, seed=5)
    b = synthetic("share", [0.7, 0.7], 30, seed=6)
    rep = ab_compare(a, b, num_boot=200)
    length = row(rep, "spec_decode_acceptance_length")
    assert length.a == pytest.approx(a.get("spec_decode_acceptance_length"))
    assert row(rep, "pos1").b == pytest.approx(100 * b.get("spec_decode_per_position_acceptance_rates")[1])


def test_upstream_acceptance_change_does_not_clear_its_own_placebo():
    fresh, share = load_result(f"{UPSTREAM}/fresh.json"), load_result(f"{UPSTREAM}/share.json")
    fresh.policy, share.policy = "fresh", "share"
    rep = ab_compare(fresh, share)
    assert rep.noise_floor["pos0"] == pytest.approx(0.54)
    rate = row(rep, "spec_decode_acceptance_rate")
    assert rate.delta == pytest.approx(-0.24) and not rate.has_ci
    assert rep.within_noise(rate) is True


def test_no_placebo_when_a_policy_changes_draft_step_zero():
    a = synthetic("fresh", [0.8, 0.7], 20, seed=7)
    b = synthetic("target_share", [0.3, 0.2], 20, seed=8)
    assert ab_compare(a, b, num_boot=100).noise_floor is None


def test_fidelity_error_is_relative_to_the_real_value():
    real = Result("vllm-bench", "fresh", {"output_throughput": 100.0, "median_tpot_ms": 20.0})
    sim = Result("simulate", "fresh", {"output_throughput": 103.0, "median_tpot_ms": 19.0})
    rows = fidelity(real, sim)
    assert [r.error_pct for r in rows] == pytest.approx([3.0, -5.0])
    assert mean_abs_pct_error(rows) == pytest.approx(4.0)


def test_compare_command_prints_the_upstream_ab_as_json():
    res = CliRunner().invoke(app, ["compare", f"{UPSTREAM}", "--json"])
    assert res.exit_code == 0, res.output
    ab = json.loads(res.output)["ab"]["real:share"]
    assert ab["noise_floor"]["pos0"] == pytest.approx(0.54)


def test_compare_with_nothing_comparable_exits_2_with_one_line(tmp_path):
    res = CliRunner().invoke(app, ["compare", f"share={UPSTREAM}/share.json"])
    assert res.exit_code == 2
    assert "nothing to compare" in res.output and "Traceback" not in res.output


def test_compare_on_a_missing_file_exits_2(tmp_path):
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "missing.json")])
    assert res.exit_code == 2 and "file not found" in res.output
