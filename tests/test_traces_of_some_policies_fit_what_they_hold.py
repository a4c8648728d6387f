"""`simulate --trace` with traces of only some of the spec's policies: the fit prices what the
traces hold; a policy without a trace takes its top-k overlap from the spec (said in a note),
and one whose acceptance only its own trace can give is left out (said), or refused in one
line when chosen with --policy."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from _synthetic_traces import make_trace
from typer.testing import CliRunner

from mtpsim.calibration.partial import fill_from_spec
from mtpsim.calibration.traces import fit_from_traces
from mtpsim.cli import app
from mtpsim.spec import load_experiment

SPEC = Path(__file__).resolve().parents[1] / "experiments" / "reference-cpu.toml"  # 4 policies


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("traces")
    out = {}
    for policy in ("fresh", "share"):
        out[policy] = d / f"{policy}.trace.jsonl"
        make_trace(policy, 3, n_requests=8).write(out[policy])
    return out


def _simulate(*args: str):
    return CliRunner().invoke(app, ["simulate", str(SPEC), "--set", "workload.num_prompts=8", *args])


def test_two_traces_price_three_policies_and_say_what_came_from_the_spec(traces):
    r = _simulate("--trace", str(traces["fresh"]), "--trace", str(traces["share"]), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert list(out["results"]) == ["fresh", "share", "share_recent"]
    assert "share_recent: no trace; top-k overlap from the spec's acceptance.overlap_agreement" in r.stderr
    assert "left out: target_share" in r.stderr


def test_the_filled_overlap_is_the_specs_agreement(traces):
    exp = load_experiment(SPEC)
    cal = fit_from_traces([traces["fresh"], traces["share"]])
    filled, notes, left_out = fill_from_spec(cal, exp)
    a = exp.acceptance
    for step, (u0, u1) in enumerate(filled.overlap.policies["share_recent"], start=1):
        assert u1 == 0.0
        expected = a.overlap_agreement ** (step ** a.overlap_step_exponent)
        assert 1 / (1 + math.exp(-u0)) == pytest.approx(expected)
    assert filled.overlap.policies["share"] == cal.overlap.policies["share"]  # fitted rows kept
    assert len(notes) == 1 and [x.split(" ")[0] for x in left_out] == ["target_share"]


def test_a_chosen_policy_without_the_trace_it_needs_is_one_line(traces):
    r = _simulate("--trace", str(traces["fresh"]), "--trace", str(traces["share"]), "-p", "fresh",
                  "-p", "target_share")
    assert r.exit_code == 2 and r.output.count("\n") == 1
    assert "--trace" in r.output and "target_share" in r.output


def test_fresh_traces_alone_price_fresh_and_say_why_share_is_left_out(traces):
    r = _simulate("--trace", str(traces["fresh"]), "--json", "--set", 'policies=["fresh", "share"]')
    assert r.exit_code == 0, r.output
    assert list(json.loads(r.stdout)["results"]) == ["fresh"]
    assert "share (the overlap -> acceptance penalty needs a trace of a reuse policy)" in r.stderr
