"""`mtpsim advise`'s stopping rule on a fake draw source whose Monte Carlo SE is known: share's
throughput is fresh's times (1 + e / 100), e ~ N(0, SIGMA²) from each draw's own seed and no
discrepancy term, so a quoted end is a quantile of n independent normal values and its SE is
sqrt(p (1 - p)) / φ(z_p) x SD / sqrt(n) (2.11 SD / sqrt(n) at the 5 % and 95 % ends). The
stages double until the printed SE meets the target and stop there; where the cap comes
first, the run says so (`stopped_by`, the Monte Carlo line) and projects the draws needed."""

import json
import math

import numpy as np
import pytest
from _advise_files import deployment  # noqa: E402
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.uncertainty import advise as A

SIGMA = 1.0  # SD of share vs fresh, %; share vs no MTP is 1.25 x it (fresh runs 1.25 x no MTP)
END_FACTOR = 2.11  # sqrt(0.05 x 0.95) / φ(1.645)
DEP = deployment("k = [2]\ndraws = 16\nmax_draws = {cap}", description="fake draws",
                 rest="[uncertainty]\nmc_se_target = {target}\n")


def known_se(n: int) -> float:
    """The worst quoted end's SE at n draws: share vs no MTP, SD 1.25 SIGMA."""
    return END_FACTOR * 1.25 * SIGMA / math.sqrt(n)


@pytest.fixture
def fake(monkeypatch):
    """No simulation: every (cell, draw) from a formula, and no discrepancy term."""
    def run(exps, tasks, jobs):
        for cell, d in tasks:
            e = np.random.default_rng(d.seed).normal(0.0, SIGMA)
            fresh = {"output_throughput": 100.0, "median_tpot_ms": 10.0, A.AL: 2.0}
            share = {"output_throughput": 100.0 * (1 + e / 100), "median_tpot_ms": 10.0 / (1 + e / 100),
                     A.AL: 2.0}
            plain = {"output_throughput": 80.0, "median_tpot_ms": 12.5, A.AL: 1.0}
            yield cell, d.index, ({"no_mtp": plain} if cell[0] == 0 else {"fresh": fresh, "share": share})

    monkeypatch.setattr(A, "_run", run)
    monkeypatch.setattr(A.Spread, "of", classmethod(lambda cls, *a, **k: cls(0.0, 0.0, 0.0)))


def _advise(tmp_path, cap: int, target: float) -> A.Advice:
    p = tmp_path / "dep.toml"
    p.write_text(DEP.format(cap=cap, target=target))
    return A.advise(A.load_deployment(p))


def test_the_printed_se_follows_the_known_se_and_the_stages_stop_once_it_is_met(tmp_path, fake):
    # the target sits between the known SE at 256 and at 512 draws: the stages go on to 512
    target = 0.5 * (known_se(256) + known_se(512))
    adv = _advise(tmp_path, 4096, target)
    assert adv.stages == [16, 32, 64, 128, 256, 512][:len(adv.stages)]
    for n, se in zip(adv.stages, adv.stage_se, strict=True):
        assert 0.6 * known_se(n) < se < 1.6 * known_se(n), (n, se, known_se(n))
    # the rule: go on while the worst SE is above the target, stop at the first stage at or below
    assert all(se > target for se in adv.stage_se[:-1]) and adv.stage_se[-1] <= target
    assert adv.stopped == "target" and adv.stages[-1] in (256, 512, 1024)


def test_a_cap_that_stops_the_stages_first_is_reported(tmp_path, fake):
    adv = _advise(tmp_path, 64, 1e-3)
    assert adv.stages == [16, 32, 64] and adv.stopped == "cap"
    assert all(se > 1e-3 for se in adv.stage_se)


def test_the_cap_is_on_screen_and_in_the_json_with_the_draws_it_would_take(tmp_path, fake):
    p = tmp_path / "dep.toml"
    p.write_text(DEP.format(cap=64, target=0.01))
    res = CliRunner().invoke(app, ["advise", str(p), "--json", "-j", "1", "--point-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    sampler = json.loads(res.stdout)["sampler"]
    assert sampler["stopped_by"] == "cap" and sampler["stages"] == [16, 32, 64]
    assert set(sampler["draws_needed"]) == set(sampler["not_met"]) and sampler["not_met"]
    worst = max(sampler["not_met"], key=sampler["not_met"].get)
    assert sampler["draws_needed"][worst] == math.ceil(64 * (sampler["not_met"][worst] / 0.01) ** 2)
    screen = CliRunner().invoke(app, ["advise", str(p), "-j", "1", "--point-dir", str(tmp_path)],
                                env={"COLUMNS": "120"})
    assert ("target 0.01 not met at 64 draws (the next stage's 128 would pass [advise] max_draws 64)"
            in " ".join(screen.output.split()))


def test_a_met_target_says_so(tmp_path, fake):
    p = tmp_path / "dep.toml"
    p.write_text(DEP.format(cap=64, target=10.0))
    res = CliRunner().invoke(app, ["advise", str(p), "--json", "-j", "1", "--point-dir", str(tmp_path)])
    sampler = json.loads(res.stdout)["sampler"]
    assert sampler["stopped_by"] == "target" and sampler["stages"] == [16]
    assert sampler["not_met"] == {} and sampler["draws_needed"] == {}


@pytest.mark.parametrize("flag, value", [("--max-draws", "0"), ("--max-draws", "abc"),
                                         ("--draws", "-3"), ("--max-draws", "8")])
def test_bad_draw_flags_are_one_line_exit_2(tmp_path, flag, value):
    p = tmp_path / "dep.toml"
    p.write_text(DEP.format(cap=64, target=0.1))
    res = CliRunner().invoke(app, ["advise", str(p), flag, value, "--point-dir", str(tmp_path)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and flag in lines[0], res.output

