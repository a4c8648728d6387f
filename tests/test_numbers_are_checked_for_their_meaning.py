"""Numbers accepted only with their meaning: in a calibration file (ranges of tokens, requests,
k and top-k are >= 1; gap_s is seconds between engine steps; context_ref a mean context in
tokens; every cost feature one its phase is priced on), a trace (one step's phase seconds),
an experiment's measured rows (a throughput of 0 or -5 measures nothing) and its uncertainty
SDs. Each out-of-meaning value (drawn by Hypothesis) is one line and exit 2, never a
ZeroDivisionError, an overflow, a 1e302 ms TPOT or a feature silently priced at 0 s. And what
is printed and written holds no NaN and no "-0.00"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _synthetic_traces import make_trace
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.report.numbers import signed

ROOT = Path(__file__).resolve().parents[1]
FAST = settings(max_examples=12, deadline=None, database=None)
EXPERIMENT = """
seed = 3
policies = ["fresh", "share"]
[engine]
scheduler = "reference"
[speculative]
num_speculative_tokens = 3
index_topk = 64
[workload]
num_prompts = 6
input_len = 400
output_len = 40
max_concurrency = 2
[calibration]
file = "cal.json"
"""


def _run(args: list[str]):
    return CliRunner().invoke(app, args)


def _refused(args: list[str], *words: str) -> None:
    r = _run(args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and r.output.count("\n") == 1, r.output
    for w in words:
        assert w in r.output, r.output


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("meaning")
    for policy in ("fresh", "share"):
        make_trace(policy, 3, n_requests=8).write(d / f"{policy}.trace.jsonl")
    (d / "exp.toml").write_text(EXPERIMENT)
    r = _run(["simulate", str(d / "exp.toml"), "--trace", str(d / "fresh.trace.jsonl"), "--trace",
              str(d / "share.trace.jsonl"), "--save-calibration", str(d / "cal.json"), "--json"])
    assert r.exit_code == 0, r.output
    assert _run(["simulate", str(d / "exp.toml"), "--json"]).exit_code == 0  # the file is valid
    return d


def _with(folder: Path, edit) -> list[str]:
    cal = json.loads((folder / "cal.json").read_text())
    edit(cal)
    (folder / "cal-bad.json").write_text(json.dumps(cal))
    (folder / "exp-bad.toml").write_text(EXPERIMENT.replace("cal.json", "cal-bad.json"))
    return ["simulate", str(folder / "exp-bad.toml"), "--json"]


NOT_A_COUNT = st.sampled_from([0, -1, -5.5, 0.5, 1e-300, 1e300])


@FAST
@given(key=st.sampled_from(["context_len", "num_reqs", "k", "index_topk"]), bad=NOT_A_COUNT)
def test_calibration_ranges_of_counts_are_at_least_one(folder, key, bad):
    def edit(cal):
        cal["ranges"][key] = [bad, 8]
    _refused(_with(folder, edit), f"ranges.{key}")


@FAST
@given(gap=st.sampled_from([-1e-9, 11.0, 1e300]) | st.floats(10.001, 1e308))
def test_gap_s_is_seconds_between_steps(folder, gap):
    def edit(cal):
        cal["cost"]["gap_s"] = gap
    _refused(_with(folder, edit), "cost.gap_s")


@FAST
@given(ref=st.sampled_from([1e-300, 0.5, 0, -3]) | st.floats(-1e9, 0.999))
def test_context_ref_is_a_context_in_tokens(folder, ref):
    def edit(cal):
        cal["acceptance"]["context_ref"] = ref
    _refused(_with(folder, edit), "acceptance.context_ref")


@FAST
@given(name=st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10))
def test_an_unknown_cost_feature_is_refused_not_priced_at_zero(folder, name):
    from mtpsim.models.cost import StepShape, cost_features

    if name in cost_features(StepShape(), 1, 1)["verify"]:
        return

    def edit(cal):
        ph = cal["cost"]["phases"]["verify"]
        ph["features"].append(name)
        ph["coef"].append(0.001)
    _refused(_with(folder, edit), "cost.phases.verify.features", repr(name))


@FAST
@given(seconds=st.floats(600.001, 1e308) | st.sampled_from([1e308, -1.0]))
def test_trace_phase_times_are_seconds_of_one_step(folder, seconds):
    lines = (folder / "share.trace.jsonl").read_text().splitlines()
    step = json.loads(lines[2])
    step["phases"]["verify"] = seconds
    bad = folder / "bad.trace.jsonl"
    bad.write_text("\n".join([*lines[:2], json.dumps(step), *lines[3:]]) + "\n")
    _refused(["simulate", str(folder / "exp.toml"), "--trace", str(folder / "fresh.trace.jsonl"),
              "--trace", str(bad)], "bad.trace.jsonl", "phases.verify")


@FAST
@given(value=st.sampled_from([0, -5, -0.0, -1e-9]),
       key=st.sampled_from(["output_throughput", "median_tpot_ms", "spec_decode_acceptance_length"]))
def test_measured_rows_hold_positive_figures(tmp_path_factory, value, key):
    text = (ROOT / "experiments" / "pr47352.toml").read_text()
    text = text.replace("[calibration.measured.fresh]  # topk index sharing = False\n",
                        f"[calibration.measured.fresh]\n{key}_x = 1\n", 1)
    lines = [ln for ln in text.splitlines() if not ln.startswith(f"{key} =")]
    path = tmp_path_factory.mktemp("m") / "exp.toml"
    path.write_text("\n".join(lines).replace(f"{key}_x = 1", f"{key} = {value!r}") + "\n")
    for command in (["calibrate", str(path)], ["simulate", str(path)]):
        _refused(command, f"calibration.measured.fresh.{key}")


@FAST
@given(field=st.sampled_from(["discrepancy_pct", "extrapolation_pct", "machine_pct",
                              "effect_extrapolation_pct", "timing_noise_pct"]),
       value=st.floats(1000.001, 1e300) | st.sampled_from([1e11, -1.0]))
def test_uncertainty_sds_in_percent_are_bounded(field, value):
    _refused(["simulate", str(ROOT / "experiments" / "pr47352.toml"), "--uncertainty", "2",
              "--set", f"uncertainty.{field}={value!r}"], f"uncertainty.{field}")


@FAST
@given(x=st.floats(allow_nan=True, allow_infinity=True) | st.none(), d=st.integers(0, 4))
def test_signed_figures_never_show_nan_or_negative_zero(x, d):
    text = signed(x, d)
    assert "nan" not in text.lower() and "inf" not in text.lower()
    assert not text.startswith("-0") or any(c not in "-0.," for c in text)


def test_a_run_without_drafts_prints_and_writes_no_nan(tmp_path):
    args = ["simulate", str(ROOT / "experiments" / "pr47352.toml"), "--set", "workload.num_prompts=1",
            "--set", "workload.output_len=1"]
    r = _run(args)
    assert r.exit_code == 0 and "nan" not in r.output.lower(), r.output
    assert "acceptance length n/a: no drafts" in r.output
    for extra in (["--json"], ["--uncertainty", "2", "--json", "--out", str(tmp_path / "u")]):
        r = _run([*args, *extra])
        assert r.exit_code == 0, r.output
        json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in --json"))
    written = list((tmp_path / "u").rglob("*.json"))
    assert written
    for f in written:
        json.loads(f.read_text(), parse_constant=lambda c, f=f: pytest.fail(f"bare {c} in {f}"))
