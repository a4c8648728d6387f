"""A prediction and a rounds run describe one workload: with `workload.rounds = R` the simulator
serves the requests as `run-real`'s interleaved rounds do (R consecutive chunks, each a burst
of its own from t = 0, pooled by mtpsim.rounds.pool), run-real takes its default rounds from the
same field, and `compare` says when a simulation and a real run served different workloads
(v10 scored stream predictions against burst runs: docs/uncertainty.md §11)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mtpsim import rounds as rounds_mod
from mtpsim.cli import app
from mtpsim.real.run import round_plan
from mtpsim.result import Result
from mtpsim.sim.simulator import Simulator, simulate
from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]
SPEC = str(ROOT / "experiments" / "reference-cpu.toml")
CAL = ROOT / "experiments" / "heldout" / "calibration.json"  # step costs fitted on the CPU engine
# 24 requests of 900-token prompts at concurrency 4: the v10 in-range shape that missed by ~4x
SHAPE = ["workload.num_prompts=24", "workload.input_len=900", "workload.output_len=48",
         "workload.max_concurrency=4", 'policies=["fresh", "share"]',
         f"calibration.file={json.dumps(str(CAL))}"]


def _exp(*more: str):
    return load_experiment(SPEC, [*SHAPE, *more])


def test_each_round_is_a_burst_of_its_chunk_and_the_pool_is_run_reals():
    exp = _exp("workload.rounds=6")
    res = simulate(exp, "fresh")
    chunks = rounds_mod.chunks(24, 6)
    assert [r["requests"] for r in res.extra.rounds] == [[c.start, c.stop] for c in chunks]
    parts = [Simulator(exp, "fresh", requests=c).run() for c in chunks]
    # every round starts from an empty engine at t = 0: its first requests arrive together
    for part in parts:
        assert min(q.arrival_s for q in part.requests) == 0.0
    # the pooled clock is the rounds' end to end, as run-real pools its rounds
    assert res.get("duration") == pytest.approx(sum(p.get("duration") for p in parts))
    assert res.get("completed") == 24
    assert sorted(int(q.request_id.split("-")[1]) for q in res.requests) == list(range(24))
    # the same requests as the stream, only served in rounds
    stream = simulate(_exp(), "fresh")
    assert [q.input_len for q in res.requests] == [q.input_len for q in stream.requests]
    assert [q.output_len for q in res.requests] == [q.output_len for q in stream.requests]


def test_bursts_decode_undisturbed_by_later_prefills_unlike_the_stream():
    """In the stream a new 900-token prefill stalls the running requests' decoding at every
    finish; in a burst of `max_concurrency` requests every prefill runs before the decodes."""
    stream, burst = simulate(_exp(), "fresh"), simulate(_exp("workload.rounds=6"), "fresh")
    assert burst.get("median_tpot_ms") < 0.6 * stream.get("median_tpot_ms")
    assert burst.get("median_ttft_ms") > 2.0 * stream.get("median_ttft_ms")
    # one round, or none, is the stream itself
    one = simulate(_exp("workload.rounds=1"), "fresh")
    assert one.get("median_tpot_ms") == stream.get("median_tpot_ms")


def test_uncertainty_draws_simulate_the_rounds_too():
    from mtpsim.uncertainty.draws import plan, run_draw

    exp = _exp("workload.rounds=6")
    draw = plan(exp, 1)[0]
    drawn = run_draw(exp, draw)["fresh"]["median_tpot_ms"]
    stream = run_draw(_exp(), draw)["fresh"]["median_tpot_ms"]
    assert drawn < 0.6 * stream


def test_run_real_takes_its_default_rounds_from_the_spec_and_the_flag_wins():
    assert len(round_plan(_exp(), None, False)) == 6  # auto: one full batch per round
    assert len(round_plan(_exp("workload.rounds=3"), None, False)) == 3
    assert len(round_plan(_exp("workload.rounds=3"), 2, False)) == 2
    assert [c for _, c in round_plan(_exp("workload.rounds=3"), None, False)] == rounds_mod.chunks(24, 3)


def _write(res: Result, path, mode: str | None = None) -> str:
    obj = res.to_json()
    if mode:
        obj["mode"] = mode
    path.write_text(json.dumps(obj))
    return str(path)


def test_compare_says_when_simulation_and_run_served_different_workloads(tmp_path):
    real = simulate(_exp("workload.rounds=6"), "fresh")  # stands in for a 6-round reference run
    real_path = _write(real, tmp_path / "real.json", mode="reference")
    stream = _write(simulate(_exp(), "fresh"), tmp_path / "stream.json")
    rounds6 = _write(simulate(_exp("workload.rounds=6"), "fresh"), tmp_path / "rounds.json")
    r = CliRunner().invoke(app, ["compare", real_path, stream, "--json"])
    assert r.exit_code == 0, r.output
    unlike = json.loads(r.output)["fidelity"]["fresh"]["workload_mismatch"]
    assert "6 rounds" in unlike and "workload.rounds=6" in unlike
    r = CliRunner().invoke(app, ["compare", real_path, rounds6, "--json"])
    out = json.loads(r.output)["fidelity"]["fresh"]
    assert out["workload_mismatch"] is None
    errors = {row["metric"]: row["error_pct"] for row in out["rows"]}
    assert np.isclose(errors["median_tpot_ms"], 0.0)  # like with like: the same simulated workload


@pytest.mark.parametrize("value, expect", [("30", "at most num_prompts (24)")])
def test_more_rounds_than_requests_is_one_line_naming_the_field(value, expect):
    r = CliRunner().invoke(app, ["simulate", SPEC, *[a for s in SHAPE for a in ("--set", s)],
                                 "--set", f"workload.rounds={value}"])
    assert r.exit_code == 2
    assert "workload.rounds" in r.output and expect in r.output
    assert "Traceback" not in r.output
