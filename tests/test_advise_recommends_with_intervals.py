"""`mtpsim advise` simulates each (k, context, concurrency) cell for each vLLM policy on shared
draws and answers with a recommendation, gains with P(gain > 0), and "cannot tell" where the
interval spans 0."""

import json
from pathlib import Path

import numpy as np
import pytest
from _advise_files import deployment  # noqa: E402
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.uncertainty.advise import advise, load_deployment
from mtpsim.verdict import MC_MARGIN

DEP = deployment("k = [1, 3]\ndraws = 4\nmax_draws = 4", contexts="[1024, 4096]", weights="[0.5, 0.5]",
                 description="tiny")


def test_advise_gives_every_k_and_policy_an_interval_and_a_recommendation(tmp_path):
    p = tmp_path / "dep.toml"
    p.write_text(DEP)
    adv = advise(load_deployment(p))
    rows = adv.rows(0.9)
    # plain decoding (k = 0) is always simulated, once, as the baseline "no_mtp"
    assert [(r["k"], r["policy"]) for r in rows] == [(0, "no_mtp"), (1, "fresh"), (1, "share"),
                                                     (3, "fresh"), (3, "share")]
    assert "gain_vs_no_mtp_pct" not in rows[0]
    assert all("gain_vs_no_mtp_pct" in r for r in rows[1:])
    for r in rows:
        iv = r["output_throughput"]
        assert 0 < iv.lo <= iv.median <= iv.hi
    k, policy, gain, robust = adv.best_median(0.9)
    assert (k, policy) in {(r["k"], r["policy"]) for r in rows}
    # robust: the best fresh setting itself, or a gain whose interval clears 0 by more than its
    # Monte Carlo margin (MC_MARGIN x MC SE: 4 draws leave a wide one, so lo > 0 is not enough)
    clears = gain.lo - (0.0 if np.isnan(gain.mc_se) else MC_MARGIN * gain.mc_se) > 0
    assert robust == ((k, policy) == (adv.best_fresh(), "fresh") or clears)
    # the same draws in every cell: a k=1 cell sees k=3's parameter values
    assert len(adv.draws) == 4 and all(len(f) == 4 for v in adv.values.values()
                                       for p in v.values() for f in p.values())
    # k = 1 runs no draft step >= 1: sharing saves nothing there and only pays the row gather
    same = adv.share_vs_fresh(1)  # [draws, discrepancy scores]
    assert (same <= 0).all() and abs(np.median(same)) < 0.1 and np.quantile(same, 0.05) > -0.5


def test_advise_json_names_the_verdict_and_flags_extrapolation(tmp_path):
    p = tmp_path / "dep.toml"
    p.write_text(DEP)
    res = CliRunner().invoke(app, ["advise", str(p), "--json", "-j", "1", "--draws", "3"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["draws"] == 3 and out["recommendation"]["policy"] in ("fresh", "share")
    assert any(line.startswith(("recommended", "cannot tell")) for line in out["verdict"])
    assert out["verdict"][0].startswith("k: fresh k=")
    assert any("context" in n for notes in out["extrapolation"].values() for n in notes)


def _known_advice(dep_path, share_gain):
    """An Advice whose per-draw figures are set by hand: fresh k=2 beats fresh k=1 by 5 % in
    every draw, and share at k=2 gains `share_gain(u)` % over fresh k=2, u being the draw's
    critical_entries quantile (indexer_cost has no effect)."""
    from mtpsim.uncertainty.advise import Advice
    from mtpsim.uncertainty.draws import Z_NAMES, Draw

    dep = load_deployment(dep_path)
    n = 16
    us = (np.arange(n) + 0.5) / n
    draws = [Draw(i, i, {}, {"critical_entries": float(u), "indexer_cost": float((7 * i % n) / n)},
                  dict.fromkeys(Z_NAMES, 0.0)) for i, u in enumerate(us)]
    values = {}
    for k, base in ((1, 1000.0), (2, 1050.0)):
        for ctx in dep.contexts:
            share = np.array([base * (1 + share_gain(u) / 100) if k == 2 else base * 0.999
                              for u in us])[:, None]  # [draws, inner]: one score per draw here
            fresh = np.full((n, 1), base)
            values[(k, ctx, 2)] = {"fresh": {"output_throughput": fresh, "median_tpot_ms": 8e3 / fresh},
                                   "share": {"output_throughput": share, "median_tpot_ms": 8e3 / share}}
    notes = {c: (("k 2 outside 3 (0.6)",) if c[0] == 2 else ()) for c in values}
    return Advice(dep, list(values), [], values, notes, draws, 1.0, replicate=np.arange(n) % 4,
                  stages=[n], cap=n)


KNOWN = DEP.replace("k = [1, 3]", "k = [1, 2]")


def _advise_with(monkeypatch, tmp_path, share_gain, *extra):
    import mtpsim.uncertainty.advise as adv_mod

    p = tmp_path / "dep.toml"
    p.write_text(KNOWN)
    known = _known_advice(p, share_gain)
    monkeypatch.setattr(adv_mod, "advise", lambda dep, jobs=1, progress=None: known)
    res = CliRunner().invoke(app, ["advise", str(p), "-j", "1", "--point-dir", str(tmp_path / "pts"),
                                   *extra], env={"COLUMNS": "100"})
    assert res.exit_code == 0, res.output
    return res.stdout


def test_a_robust_gain_is_recommended_with_its_numbers(monkeypatch, tmp_path):
    out = _advise_with(monkeypatch, tmp_path, lambda u: 2.0 + u)  # +2..+3 %: share wins
    rec = next(ln for ln in out.splitlines() if ln.startswith("recommended:"))
    assert rec.startswith("recommended: k=2, share: expected gain over the best fresh setting "
                          "(k=2) +2.50 % [+2.")
    assert "P(gain > 0) = 1.00" in out.replace("\n", " ")
    assert "cannot tell:" not in out
    js = json.loads(_advise_with(monkeypatch, tmp_path, lambda u: 2.0 + u, "--json"))
    assert js["best_median"]["robust"] and js["cannot_tell"] is None
    assert (js["recommendation"]["k"], js["recommendation"]["policy"]) == (2, "share")
    # every quoted delta has its MC SE; the baseline's gain (0 by definition) is not quoted
    sampler = js["sampler"]
    assert "k=2 fresh gain" not in sampler["mc_se"] and "k=2 share vs fresh" in sampler["mc_se"]
    assert set(sampler["not_met"]) == {k for k, v in sampler["mc_se"].items() if not v <= 0.1}
    assert sampler["replicates"] == 4 and sampler["stages"] == [16]


def test_cannot_tell_says_why_and_prints_the_command_that_decides(monkeypatch, tmp_path):
    out = _advise_with(monkeypatch, tmp_path, lambda u: 8 * (u - 0.45),  # spans 0, P(>0) ~ 0.56
                       "--plot", str(tmp_path / "plot"))
    flat = " ".join(out.split())
    assert "recommended: k=2, fresh: 1,050 [1,050, 1,050] output tok/s" in flat
    assert "cannot tell: k=2, share has the best median" in flat
    assert "P(gain > 0) = 0.56" in flat and "interval spans 0" in flat
    # why: the parameter that moves the gain, and the extrapolation that widens it
    assert "Why: acceptance trace parameters (critical_entries" in flat
    assert "outside the PR's measured setup" in flat
    cmd = next(ln for ln in out.splitlines() if ln.startswith("  mtpsim run-real "))
    # a short command: the cell's settings live in the point file it runs
    point = tmp_path / "pts" / "dep-k2-ctx1024.toml"
    assert cmd.startswith(f"  mtpsim run-real {point} --engine vllm --trace")
    assert "--set" not in cmd and len(cmd.split(" && ")[0]) < 200
    assert f"the cell's settings are in {point}" in flat
    from mtpsim.spec.experiment import load_experiment

    exp = load_experiment(point)  # the point file loads as the cell's experiment
    assert exp.k == 2 and exp.workload.max_concurrency == 2 and exp.workload.input_len == 1024
    assert exp.calibration.measured == {}  # the PR's rows are of another setup
    png = tmp_path / "plot" / "advise-gain.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    js = json.loads(_advise_with(monkeypatch, tmp_path, lambda u: 8 * (u - 0.45), "--json"))
    assert js["cannot_tell"]["measurement"] == "acceptance trace"
    assert js["cannot_tell"]["params"][0] == "critical_entries"


@pytest.mark.slow
def test_the_shipped_example_recommends_with_numbers_and_says_what_would_decide(tmp_path):
    """experiments/advise-deepseek-v3.2-b200.toml at its first stage's 64 draws (4 are too few:
    with the preset's wider penalty priors they once called share robust): k=2 fresh, numbers
    given; sharing at k=2 cannot be told apart and the command that decides it."""
    example = Path(__file__).resolve().parents[1] / "experiments" / "advise-deepseek-v3.2-b200.toml"
    res = CliRunner().invoke(app, ["advise", str(example), "--json", "-j", "1", "--draws", "64",
                                   "--point-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["best_fresh_k"] == 2 and out["recommendation"]["k"] == 2
    rec = next(v for v in out["verdict"] if v.startswith("recommended: k=2, fresh: "))
    assert "output tok/s, median TPOT" in rec
    doubt = out["cannot_tell"]
    gain = doubt["gain_pct"] if doubt is not None else {}
    # cannot tell: the interval spans 0, or an end within MC_MARGIN Monte Carlo SEs of it
    assert gain and gain["lo"] - MC_MARGIN * gain["mc_se"] < 0 < gain["hi"] + MC_MARGIN * gain["mc_se"]
    assert doubt["command"].startswith(f"mtpsim run-real {doubt['point']} --engine vllm")
    assert Path(doubt["point"]).parent == tmp_path and "k2-ctx" in doubt["point"]
    assert any(v.startswith("cannot tell: k=2, share") and "Why: " in v for v in out["verdict"])


def test_the_k_sentence_names_the_next_best_k_the_table_ranks_second(tmp_path):
    """"cannot tell it from the next best, k=N": N is the fresh k with the second-highest median
    throughput, the order of the table's tok/s column, and every number printed is explained."""
    import re

    example = Path(__file__).resolve().parents[1] / "experiments" / "advise-deepseek-v3.2-b200.toml"
    res = CliRunner().invoke(app, ["advise", str(example), "--json", "-j", "1", "--draws", "6",
                                   "--point-dir", str(tmp_path)])
    out = json.loads(res.stdout)
    fresh = {r["k"]: r["output_throughput"]["median"] for r in out["rows"]
             if r["policy"] == "fresh" and r["k"] > 0}
    best = out["best_fresh_k"]
    assert best == max(fresh, key=fresh.get)
    second = max((k for k in fresh if k != best), key=fresh.get)
    sentence = next(v for v in out["verdict"] if v.startswith("k: fresh k="))
    assert re.search(rf"the next best, k={second} at ", sentence), sentence
    legend = next(v for v in out["verdict"] if v.startswith("how to read:"))
    for term in ("interval", "median", "gain", "P(gain>0)", "P(>+R)", "octaves"):
        assert term in legend


STAGED = DEP.replace("k = [1, 3]", "k = [2]").replace("max_draws = 4", "max_draws = 64").replace(
    "draws = 4", "draws = 16").replace("context_lengths = [1024, 4096]", "context_lengths = [1024]").replace(
    "context_weights = [0.5, 0.5]", "context_weights = [1.0]")


@pytest.mark.parametrize("target, stages", [(100.0, [16]), (1e-6, [16, 32, 64])])
def test_draws_double_until_the_mc_se_target_or_the_cap(tmp_path, target, stages):
    """16 replicates of 1 draw first; each stage doubles every replicate, keeps the draws made so
    far, and stops once every quoted delta end's MC SE is at most the target, else at the cap."""
    p = tmp_path / "dep.toml"
    p.write_text(STAGED + f"[uncertainty]\nmc_se_target = {target}\n")
    adv = advise(load_deployment(p))
    assert adv.stages == stages and len(adv.draws) == stages[-1] == len(adv.replicate)
    assert len(adv.stage_se) == len(stages) and (adv.stage_se[-1] <= target) == (target > 1)
    assert sorted(set(adv.replicate.tolist())) == list(range(16))
    assert len({d.seed for d in adv.draws}) == len(adv.draws)  # every draw its own simulation seed
    first = advise(load_deployment(p))  # the same file, the same draws: a run is reproducible
    assert np.array_equal(first.share_vs_fresh(2), adv.share_vs_fresh(2))


def test_a_later_stage_keeps_the_earlier_draws(tmp_path):
    p = tmp_path / "dep.toml"
    p.write_text(STAGED.replace("max_draws = 64", "max_draws = 32") + "[uncertainty]\nmc_se_target = 1e-6\n")
    two = advise(load_deployment(p))
    p.write_text(STAGED.replace("max_draws = 64", "max_draws = 16"))
    one = advise(load_deployment(p))
    assert two.stages == [16, 32] and one.stages == [16]
    assert [d.values for d in two.draws[:16]] == [d.values for d in one.draws]
    assert np.array_equal(two.share_vs_fresh(2)[:16], one.share_vs_fresh(2))
