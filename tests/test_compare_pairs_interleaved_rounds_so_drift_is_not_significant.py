"""`mtpsim compare` judges timing deltas from interleaved rounds: a machine-speed ramp that
slows whichever policy runs later is not called a difference, a real speed-up under the same
ramp is, one run per policy gets no timing verdict at all, and fewer than three rounds are
"too few rounds to tell"."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mtpsim import rounds
from mtpsim.cli import app
from mtpsim.compare import NO_ROUNDS, ab_compare
from mtpsim.paired import TOO_FEW, paired_delta
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result


def _requests(tpot_s: float, n: int = 4) -> list[RequestRecord]:
    return [RequestRecord(f"r{j}", 100, 51, 0.0, 0.1, 0.1 + 50 * tpot_s, [tpot_s] * 50, [1] * 50,
                          20, 60, 30, [12, 10, 8]) for j in range(n)]


def _ramped(n_rounds: int, effect: float, interleaved: bool, ramp: float = 0.04) -> tuple[Result, Result]:
    """fresh and share over `n_rounds` rounds on a machine that slows by `ramp` per block;
    share is truly `effect` faster (0: the same speed)."""
    plan = rounds.order(("fresh", "share"), n_rounds) if interleaved else \
        [("fresh",)] * n_rounds + [("share",)] * n_rounds
    runs: dict[str, list[Result]] = {"fresh": [], "share": []}
    block = 0
    for names in plan:
        for position, name in enumerate(names):
            speed = (1 + ramp * block) * (1 - effect if name == "share" else 1.0)
            res = Result.from_requests(mode="reference", policy=name, requests=_requests(0.02 * speed),
                                       duration_s=1.0 * speed)
            res.extra.round = {"index": len(runs[name]), "of": n_rounds, "position": position}
            runs[name].append(res)
            block += 1
    return rounds.pool(runs["fresh"]), rounds.pool(runs["share"])


def _row(rep, key):
    return next(r for r in rep.rows if r.key == key)


def test_a_drift_between_policies_is_not_called_a_difference_when_rounds_interleave():
    fresh, share = _ramped(8, effect=0.0, interleaved=True)
    rep = ab_compare(fresh, share, num_boot=200)
    for key in ("output_throughput", "median_tpot_ms"):
        row = _row(rep, key)
        assert row.rounds == 8 and row.ci_pct
        assert row.verdict not in ("better", "worse"), (key, row)
        assert row.ci_low < 0 < row.ci_high


def test_the_same_drift_with_policies_run_one_after_the_other_looks_like_an_effect():
    # the failure the interleaving exists for: every later block is slower, so share "loses"
    fresh, share = _ramped(8, effect=0.0, interleaved=False)
    row = _row(ab_compare(fresh, share, num_boot=200), "output_throughput")
    assert row.verdict == "worse" and row.ci_high < 0


def test_a_real_speed_up_under_the_same_drift_is_found():
    fresh, share = _ramped(8, effect=0.10, interleaved=True)
    rep = ab_compare(fresh, share, num_boot=200)
    assert _row(rep, "output_throughput").verdict == "better"
    assert _row(rep, "median_tpot_ms").verdict == "better"  # lower TPOT is better
    assert _row(rep, "output_throughput").p_above > 0.95


def test_two_rounds_are_too_few_to_tell_and_one_run_gets_no_timing_verdict():
    fresh, share = _ramped(2, effect=0.10, interleaved=True)
    pd = paired_delta(fresh, share, "output_throughput")
    assert pd is not None and pd.verdict == TOO_FEW and pd.n == 2
    one_a = Result.from_requests(mode="reference", policy="fresh", requests=_requests(0.02), duration_s=1.0)
    one_b = Result.from_requests(mode="reference", policy="share", requests=_requests(0.01), duration_s=0.5)
    assert _row(ab_compare(one_a, one_b, num_boot=200), "output_throughput").verdict == NO_ROUNDS


def test_normalising_by_the_probe_removes_drift_inside_each_round():
    fresh, share = _ramped(6, effect=0.0, interleaved=True, ramp=0.2)
    for res in (fresh, share):  # the probe slowed exactly as the machine did
        for rnd in res.extra.rounds:
            wall = 1.0 / rnd["metrics"]["output_throughput"]
            rnd["probe"] = {"before": {"version": 1, "wall_s": wall}, "after": {"version": 1, "wall_s": wall}}
    raw = paired_delta(fresh, share, "output_throughput")
    norm = paired_delta(fresh, share, "output_throughput", normalise=True)
    assert raw is not None and norm is not None
    assert max(abs(d) for d in norm.deltas_pct) < 1e-9 < min(abs(d) for d in raw.deltas_pct)
    assert norm.verdict == "no practical difference"


def test_compare_command_prints_rounds_and_json(tmp_path):
    fresh, share = _ramped(8, effect=0.0, interleaved=True)
    fresh.write(tmp_path / "fresh.json")
    share.write(tmp_path / "share.json")
    res = CliRunner().invoke(app, ["compare", str(tmp_path), "--json", "--num-boot", "200"])
    assert res.exit_code == 0, res.output
    rows = {r["metric"]: r for r in json.loads(res.output)["ab"]["real:share"]["rows"]}
    assert rows["output_throughput"]["rounds"] == 8 and rows["output_throughput"]["ci_unit"] == "pct"
    assert rows["output_throughput"]["verdict"] not in ("better", "worse")
    assert rows["output_throughput"]["significant"] is False
    assert rows["output_throughput"]["p_above_region"] < 0.5  # no effect: not likely above the region
