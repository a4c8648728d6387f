"""Each sweep point gives exactly what `mtpsim simulate` gives for the same overrides, in a
worker process or not."""

import json

from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.sim.simulator import simulate
from mtpsim.spec import load_experiment
from mtpsim.sweep import build_points, run_points


def test_points_equal_simulate_with_the_same_overrides(tmp_path):
    exp_path = write_small(tmp_path)
    axes, points = build_points(exp_path, ["speculative.num_speculative_tokens=2,3",
                                           "workload.max_concurrency=2,8"])
    recs = {r["point_id"]: r for r in run_points(str(exp_path), points, None, jobs=2)}
    assert len(recs) == 4
    for p in points:
        exp = load_experiment(exp_path, list(p.overrides))
        for policy in exp.policies:
            want = simulate(exp, policy).metrics
            got = recs[p.point_id]["results"][policy]["metrics"]
            for key in ("output_throughput", "median_tpot_ms", "spec_decode_acceptance_length"):
                assert got[key] == want[key], (p.values, policy, key)


def test_the_command_prints_a_row_per_point_and_policy_and_json_matches(tmp_path):
    exp_path = write_small(tmp_path)
    res = CliRunner().invoke(app, ["sweep", str(exp_path), "--set", "workload.max_concurrency=1,4",
                                   "--json", "-j", "1"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["rows"]
    assert [(r["workload.max_concurrency"], r["policy"]) for r in rows] == [
        (1, "fresh"), (1, "share"), (4, "fresh"), (4, "share")]
    single = CliRunner().invoke(app, ["simulate", str(exp_path), "--set", "workload.max_concurrency=4",
                                      "--json"])
    assert json.loads(single.output)["results"]["share"]["output_throughput"] == rows[3]["output_throughput"]
