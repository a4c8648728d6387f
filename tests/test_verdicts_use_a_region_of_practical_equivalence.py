"""Verdicts are judged against a region of practical equivalence: a tiny but certain delta is "no
practical difference", an interval straddling the region's edge "cannot tell"; policies that are
the same program at the run's k (k = 1: fresh, share, share_recent) are reported, not compared."""

from __future__ import annotations

from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.compare import ab_compare
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result
from mtpsim.verdict import BETTER, SAME, UNSURE, WORSE, Rope, judge, same_program


def test_judge_against_the_region():
    assert judge(-0.13, -0.01, 0.5) == SAME  # the k = 1 "fresh wins" of old: inside +-0.5 %
    assert judge(0.6, 2.0, 0.5) == BETTER and judge(0.6, 2.0, 0.5, higher_better=False) == WORSE
    assert judge(-3.0, -0.6, 0.5) == WORSE
    assert judge(0.2, 1.5, 0.5) == UNSURE and judge(-2.0, 2.0, 0.5) == UNSURE
    assert judge(float("nan"), 1.0, 0.5) == UNSURE


def test_regions_per_metric_and_settable():
    r = Rope()
    assert r.half_width("output_throughput") == (0.5, True)
    assert r.half_width("spec_decode_acceptance_length") == (0.01, False)
    assert Rope(timing_pct=2.0).half_width("median_tpot_ms") == (2.0, True)


def test_same_program_at_k():
    assert same_program("share", "fresh", 1) and same_program("share_recent", "share", 1)
    assert not same_program("share", "fresh", 2)
    assert not same_program("target_share", "fresh", 1)  # step 0 uses the target's row
    assert not same_program("on", "off", 1)  # labels, not policies: nothing known


def _res(policy: str, k: int) -> Result:
    reqs = [RequestRecord(f"r{j}", 10, 11, 0.0, 0.1, 0.6, [0.05] * 10, [1] * 10, 10, 10 * k, 5,
                          [5] + [0] * (k - 1)) for j in range(4)]
    spec = {"speculative": {"num_speculative_tokens": k}}
    return Result.from_requests(mode="reference", policy=policy, requests=reqs, duration_s=1.0, spec=spec)


def test_compare_reports_same_program_instead_of_a_verdict(tmp_path):
    assert ab_compare(_res("fresh", 1), _res("share", 1), num_boot=100).same_program_k == 1
    assert ab_compare(_res("fresh", 2), _res("share", 2), num_boot=100).same_program_k is None
    _res("fresh", 1).write(tmp_path / "fresh.json")
    _res("share", 1).write(tmp_path / "share.json")
    out = CliRunner().invoke(app, ["compare", str(tmp_path)], env={"COLUMNS": "120"})
    assert out.exit_code == 0, out.output
    assert "share and fresh are the same program at k = 1" in out.output
    assert "Verdict" not in out.output
