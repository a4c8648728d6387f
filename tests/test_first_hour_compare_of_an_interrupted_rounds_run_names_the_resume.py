"""`mtpsim compare DIR` on the folder of an interrupted `run-real --rounds` run (round results
under DIR/rounds, a policy without its pooled DIR/<policy>.json) says, in one line and exit 2,
that the run is unfinished and the command that resumes it (read from its round results: the
experiment, the engine, the rounds and every --set, a path one as typed from here); it does not
compare a subset of the policies without a word."""

from __future__ import annotations

import json
import shlex

from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result

SETS = ["workload.num_prompts=4", 'policies=["fresh", "share"]', 'calibration.file="cal/c.json"']


def _round(out, r, policy, exp):
    reqs = [RequestRecord(f"r{j}", 100, 51, 0.0, 0.1, 1.1, [0.02] * 50, [1] * 50, 20, 60, 30,
                          [12, 10, 8]) for j in range(2)]
    res = Result.from_requests(mode="reference", policy=policy, requests=reqs, duration_s=1.0)
    res.extra.round = {"index": r, "of": 3, "position": 0}
    res.spec = {"source": str(exp), "overrides": SETS}
    (out / "rounds" / f"r{r:02d}").mkdir(parents=True, exist_ok=True)
    res.write(out / "rounds" / f"r{r:02d}" / f"{policy}.json")
    return res


def test_compare_names_the_command_that_resumes_the_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp, out = tmp_path / "specs" / "exp.toml", tmp_path / "out"
    for r in range(2):
        for policy in ("fresh", "share"):
            _round(out, r, policy, exp)
    res = CliRunner().invoke(app, ["compare", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    line = " ".join(res.output.split())
    assert "unfinished run-real --rounds run (fresh 2/3 rounds, share 2/3 rounds" in line
    assert "if it was interrupted (not still running), resume it" in line
    argv = shlex.split(line.split("started it: ", 1)[1].split(" (read from", 1)[0])
    assert argv[:7] == ["mtpsim", "run-real", str(exp), "--out", str(out), "--engine", "reference"]
    assert argv[argv.index("--rounds") + 1] == "3"
    sets = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    # the recorded path is from the experiment's folder; typed here it is from the current one
    assert sets == SETS[:2] + ['calibration.file="specs/cal/c.json"']


def test_a_policy_whose_rounds_finished_but_not_its_pooled_result_is_named(tmp_path):
    exp, out = tmp_path / "exp.toml", tmp_path / "out"
    pooled = _round(out, 0, "fresh", exp)
    _round(out, 0, "share", exp)
    pooled.extra.round = None
    pooled.write(out / "fresh.json")
    res = CliRunner().invoke(app, ["compare", str(out), "--json"])
    assert res.exit_code == 2, res.output
    assert "(share 1/3 rounds kept in" in " ".join(res.output.split())
    assert not res.stdout.strip().startswith("{")
    json.loads((out / "fresh.json").read_text())  # nothing written over


def test_a_one_round_run_cut_before_its_second_policy_names_it_and_the_resume(tmp_path):
    exp, out = tmp_path / "exp.toml", tmp_path / "out"
    res = _round(out, 0, "fresh", exp)
    res.extra.round = None
    res.spec["policies"] = ["fresh", "share"]
    res.write(out / "fresh.json")
    got = CliRunner().invoke(app, ["compare", str(out)])
    line = " ".join(got.output.split())
    assert got.exit_code == 2 and "Traceback" not in got.output
    assert f"{out} holds no result of share (policies of its experiment)" in line, line
    argv = shlex.split(line.split("resume it: ", 1)[1].split(" (read from", 1)[0])
    assert argv[argv.index("--rounds") + 1] == "1" and argv[2] == str(exp)
