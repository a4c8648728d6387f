"""`mtpsim run-real` on the reference engine splits the requests into interleaved rounds (policy
order reversed every other round), brackets every policy's round with the machine-speed probe,
pools each policy's rounds into DIR/<policy>.json, and resumes an interrupted run round by round."""

from __future__ import annotations

import json
import sys

import pytest
from test_run_real_reference_writes_results_and_traces import _setup
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.result import load_result
from mtpsim.rounds import auto_rounds, chunks, order


def test_round_plan_alternates_and_covers_every_request_once():
    assert order(("a", "b"), 4) == [("a", "b"), ("b", "a"), ("a", "b"), ("b", "a")]
    assert [list(c) for c in chunks(7, 3)] == [[0, 1], [2, 3, 4], [5, 6]]
    assert auto_rounds(32, 4) == 8 and auto_rounds(3, 2) == 1 and auto_rounds(100, 1) == 8


def _spec(tmp_path, n: int = 6):
    spec = _setup(tmp_path)
    spec.write_text(spec.read_text().replace("num_prompts = 3", f"num_prompts = {n}"))
    return spec


@pytest.mark.slow
def test_rounds_are_written_probed_and_pooled(tmp_path):
    spec, out = _spec(tmp_path), tmp_path / "out"
    r = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out), "--rounds", "3"])
    assert r.exit_code == 0, r.output
    positions = {}
    for i in range(3):
        for policy in ("fresh", "share"):
            res = load_result(out / "rounds" / f"r{i:02d}" / f"{policy}.json")
            assert res.extra.round["index"] == i and res.extra.round["of"] == 3
            assert [q.request_id for q in res.requests] == [str(2 * i), str(2 * i + 1)]
            probe = res.extra.probe
            assert probe["before"]["wall_s"] > 0 and probe["after"]["cpu_s"] > 0
            positions[(i, policy)] = res.extra.round["position"]
    assert [positions[(i, "fresh")] for i in range(3)] == [0, 1, 0]  # A B, B A, A B
    pooled = load_result(out / "share.json")
    assert len(pooled.requests) == 6 and len(pooled.extra.rounds) == 3
    assert pooled.get("total_output_tokens") == 60
    assert pooled.get("duration") == sum(x["metrics"]["duration"] for x in pooled.extra.rounds)
    assert (out / "share.trace.jsonl").is_file()
    cmp = CliRunner().invoke(app, ["compare", str(out), "--json", "--num-boot", "100"])
    rows = {x["metric"]: x for x in json.loads(cmp.output)["ab"]["real:share"]["rows"]}
    assert rows["output_throughput"]["rounds"] == 3 and rows["output_throughput"]["ci"] is not None


@pytest.mark.slow
def test_an_interrupted_rounds_run_resumes_the_rounds_it_lacks(tmp_path, monkeypatch):
    from mtpsim.engine.runner import run_policy
    from mtpsim.real.reference import InProcessReference

    def stop_in_round_2(exp, policy, progress, requests=None):
        if requests is not None and requests.start == 4:
            raise KeyboardInterrupt
        return run_policy(exp, policy, progress, requests=requests)

    monkeypatch.setattr(InProcessReference, "target", f"{__name__}:_runner")
    monkeypatch.setattr(sys.modules[__name__], "_runner", stop_in_round_2, raising=False)
    spec, out = _spec(tmp_path), tmp_path / "out"
    args = ["run-real", str(spec), "--out", str(out), "--rounds", "3", "--no-probe"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 130, first.output
    assert "fresh rounds 2/3" in first.output and "--rounds 3" in first.output
    assert not (out / "fresh.json").exists()
    monkeypatch.setattr(InProcessReference, "target", "mtpsim.engine.runner:run_policy")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert len(load_result(out / "fresh.json").extra.rounds) == 3
    changed = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out), "--rounds", "2"])
    assert changed.exit_code == 2 and "rounds (3 there, 2 now)" in changed.output
