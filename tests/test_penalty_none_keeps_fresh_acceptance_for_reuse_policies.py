"""`acceptance.penalty = "none"` (mtpsim.models.penalty.NoPenalty) is the zero penalty: a reuse
policy keeps fresh's conditional acceptance whatever its overlap, in the parametric model and with
a `[calibration] file`, in sampled and expected mode; `--uncertainty` draws none of the parameters
that only act through the penalty; the benchmarks' penalty comparisons do not score it against
itself (it is their zero baseline); a penalty name that does not exist is one line, exit 2."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.calibration.schema import read_calibration
from mtpsim.cli import app
from mtpsim.models.fitted import FittedAcceptance
from mtpsim.models.penalty import FORMS, PENALISING, NoPenalty, parametric
from mtpsim.sim.simulator import simulate
from mtpsim.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "experiments" / "heldout" / "k2-conc4.toml"  # [calibration] file, kappa_lk fitted
CAL = ROOT / "experiments" / "heldout" / "calibration.json"
# long prompts (top-k 2,048 of 12,000) and a small kappa: kappa_lk's share penalty is large
LONG = ["workload.input_len=12000", "acceptance.critical_entries=2"]


def _acceptance(path: Path, overrides: list[str]) -> dict[str, tuple]:
    exp = load_experiment(path, overrides)
    out = {}
    for policy in ("fresh", "share"):
        m = simulate(exp, policy).metrics
        out[policy] = (m["spec_decode_acceptance_length"],
                       tuple(m["spec_decode_per_position_acceptance_rates"]))
    return out


@pytest.mark.parametrize("mode", ["sampled", "expected"])
def test_parametric_share_equals_fresh_under_none_and_loses_under_kappa_lk(tmp_path, mode):
    small = write_small(tmp_path)
    none = _acceptance(small, [*LONG, f"acceptance.mode={mode}", "acceptance.penalty=none"])
    lk = _acceptance(small, [*LONG, f"acceptance.mode={mode}", "acceptance.penalty=kappa_lk"])
    assert none["share"] == none["fresh"]
    assert lk["fresh"] == none["fresh"]  # fresh is never penalised
    assert lk["share"][0] < lk["fresh"][0] - 0.05


@pytest.mark.parametrize("mode", ["sampled", "expected"])
def test_calibration_file_share_equals_fresh_under_none_and_loses_under_kappa_lk(mode):
    none = _acceptance(HELDOUT, [f"acceptance.mode={mode}", "acceptance.penalty=none"])
    lk = _acceptance(HELDOUT, [f"acceptance.mode={mode}", "acceptance.penalty=kappa_lk"])
    assert none["share"] == none["fresh"]
    assert lk["fresh"] == none["fresh"]
    assert lk["share"][0] < lk["fresh"][0]
    assert lk["share"][1][1] < lk["fresh"][1][1]  # the reused row's position 1


def test_none_reads_from_any_calibration_file():
    cal = read_calibration(CAL)
    assert cal.acceptance.penalty("none") == NoPenalty()
    ctx = np.array([300.0, 1500.0, 6000.0])
    fresh = FittedAcceptance(cal, "fresh", 4, 64, "kappa_lk").conditional(ctx)
    assert np.array_equal(FittedAcceptance(cal, "share", 4, 64, "none").conditional(ctx), fresh)
    assert not np.array_equal(FittedAcceptance(cal, "share", 4, 64, "kappa_lk").conditional(ctx),
                              fresh)
    # a policy fitted on its own curves (acceptance.policies) keeps them under every form
    acc = cal.acceptance
    own_rows = [[b0 - 0.5, b1] for b0, b1 in acc.base]
    own = dataclasses.replace(cal, acceptance=dataclasses.replace(acc, policies={"share": own_rows}))
    by_own = FittedAcceptance(own, "share", 4, 64, "none").conditional(ctx)
    assert np.array_equal(by_own, FittedAcceptance(own, "share", 4, 64, "kappa_lk").conditional(ctx))
    assert np.all(by_own < fresh)
    # a file with no fitted penalty at all still prices share under none (nothing to fit)
    bare = type(cal.acceptance)(cal.acceptance.context_ref, cal.acceptance.base, None,
                                cal.acceptance.sigma)
    assert bare.penalty("kappa_lk") is None and bare.penalty("none") == NoPenalty()


def test_the_none_form_keeps_everything_and_has_nothing_to_fit():
    form = parametric("none", 2.0, -1.0, 0.5)
    overlap = np.array([0.0, 0.3, 1.0])
    for step in (1, 2, 5):
        assert np.array_equal(form.keep(overlap, step, np.array([1.0, 16.0, 200.0])), np.ones(3))
    assert NoPenalty.fit(None) == form and NoPenalty.from_json(form.to_json(), 3) == form
    assert "none" in FORMS and "none" not in PENALISING


def _drawn_targets(tmp_path: Path, penalty: str) -> set[str]:
    res = CliRunner().invoke(app, ["simulate", str(write_small(tmp_path)), "--uncertainty", "4",
                                   "--json", "-j", "1", "--set", f"acceptance.penalty={penalty}"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return {o.split("=")[0] for d in json.loads(res.output)["draws"] for o in d["overrides"]}


def test_uncertainty_does_not_draw_the_penalty_parameters_under_none(tmp_path):
    penalty_fields = {"acceptance.critical_entries", "acceptance.critical_step_exponent",
                      "acceptance.critical_lk_exponent", "acceptance.overlap_agreement",
                      "acceptance.overlap_step_exponent"}
    # the default model preset (deepseek-v3.2) gives every one of them a range under kappa_lk
    assert penalty_fields <= _drawn_targets(tmp_path, "kappa_lk")
    drawn = _drawn_targets(tmp_path, "none")
    assert not penalty_fields & drawn
    assert "acceptance.request_sigma" in drawn  # the acceptance spread still acts


def test_penalty_benchmarks_score_the_penalising_forms_against_zero_and_not_none():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from penalty_model import FORMS as BENCH_FORMS
    from penalty_model import predicted_rates

    assert set(BENCH_FORMS) == set(PENALISING)
    # their zero-penalty baseline (fresh's curves on share's events) is what `none` predicts
    cal = read_calibration(CAL)
    ctx = np.array([400.0, 900.0, 2000.0, 3000.0])
    pos = np.array([0, 1, 2, 3])
    topk = np.array([64, 64, 32, 64])
    base = predicted_rates(cal, "kappa", "fresh", ctx, pos, 4, topk)
    assert np.array_equal(predicted_rates(cal, "none", "share", ctx, pos, 4, topk), base)
    assert np.all(predicted_rates(cal, "kappa_lk", "share", ctx, pos, 4, topk)[1:] < base[1:])


def test_an_unknown_penalty_is_one_line_naming_the_field_and_the_forms(tmp_path):
    res = CliRunner().invoke(app, ["simulate", str(write_small(tmp_path)), "--set",
                                   "acceptance.penalty=zero"], env={"COLUMNS": "200"})
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.output
    assert "acceptance.penalty" in lines[0] and "'none'" in lines[0] and "'zero'" in lines[0]
