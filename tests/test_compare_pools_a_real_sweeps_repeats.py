"""`mtpsim compare OUT` over a real sweep's folder: per point, the policy A/B on the requests of
every repeat pooled (bootstrap CIs over all of them), and the A/B delta of each repeat, whose
spread is the run-to-run noise."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.real_sweep import RealPlan, run_paths, write_point
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result
from mtpsim.sweep import Point


def _result(policy: str, accepted: int, n: int, speed: float) -> Result:
    reqs = [RequestRecord(request_id=str(i), input_len=16, output_len=20, arrival_s=0.0,
                          first_token_s=0.1 * speed, finish_s=1.0 * speed,
                          itl_s=[0.05 * speed], itl_count=[19], num_drafts=10,
                          num_draft_tokens=20, num_accepted_tokens=accepted,
                          accepted_per_pos=[accepted // 2 + accepted % 2, accepted // 2])
            for i in range(n)]
    return Result.from_requests(mode="reference", policy=policy, requests=reqs, duration_s=speed)


def test_compare_pools_repeats_and_reports_their_spread(tmp_path):
    point = Point(("speculative.index_topk=8",), {"speculative.index_topk": 8}, "p1")
    write_point(tmp_path, point, "exp.toml", RealPlan("reference", repeats=3))
    speeds = {0: (1.0, 0.9), 1: (1.0, 1.0), 2: (1.0, 1.1)}  # share faster, slower, equal
    for r, (sa, sb) in speeds.items():
        _result("fresh", 10, 4, sa).write(run_paths(tmp_path, point, r, "fresh")[0])
        _result("share", 8, 4, sb).write(run_paths(tmp_path, point, r, "share")[0])
    res = CliRunner().invoke(app, ["compare", str(tmp_path), "--json", "--num-boot", "200"])
    assert res.exit_code == 0, res.output
    # no DIR/sweep.json: the sweep never finished; compare says so and marks the JSON
    assert "1 point and no sweep.json: the sweep did not finish" in " ".join(res.stderr.split())
    assert json.loads(res.stdout)["complete"] is False
    (tmp_path / "sweep.json").write_text("{}")
    res = CliRunner().invoke(app, ["compare", str(tmp_path), "--json", "--num-boot", "200"])
    assert res.exit_code == 0 and "did not finish" not in res.stderr
    assert "complete" not in json.loads(res.stdout)
    entry = json.loads(res.stdout)["sweep"]["p1:share"]
    assert entry["repeats"] == [3, 3] and entry["num_requests"] == [12, 12]  # 3 x 4 pooled
    rows = {r["metric"]: r for r in entry["rows"]}
    acc = rows["spec_decode_acceptance_length"]
    assert (acc["a"], acc["b"]) == (2.0, 1.8) and acc["ci"] is not None
    spread = {s["metric"]: s for s in entry["between_repeats"]}
    tput = spread["output_throughput"]["deltas"]
    assert [round(d, 6) for d in tput] == [round(100 * (1 / sb - 1), 6) for _, sb in speeds.values()]
    assert spread["output_throughput"]["sd"] > 9  # +11 %, 0 %, -9 %: a noisy A/B
    acc_deltas = spread["spec_decode_acceptance_length"]["deltas"]
    assert len(acc_deltas) == 3 and all(abs(d + 0.2) < 1e-9 for d in acc_deltas)
    text = CliRunner().invoke(app, ["compare", str(tmp_path), "--num-boot", "200"],
                              env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "3/3 repeats pooled" in text.output
    assert "between repeats, output_throughput delta" in text.output
