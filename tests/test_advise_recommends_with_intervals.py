"""`mtpsim advise` simulates each (k, context, concurrency) cell for each vLLM policy on shared
draws and answers with a recommendation, gains with P(gain > 0), and "cannot tell" where the
interval spans 0."""

import json

from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.uncertainty.advise import advise, load_deployment

DEP = """
description = "tiny"
[deployment]
model = "deepseek-v3.2"
gpu = "b200"
tp = 4
quantization = "nvfp4"
[workload]
context_lengths = [1024, 4096]
context_weights = [0.5, 0.5]
concurrency = [2]
output_len = 32
[advise]
k = [1, 3]
draws = 4
"""


def test_advise_gives_every_k_and_policy_an_interval_and_a_recommendation(tmp_path):
    p = tmp_path / "dep.toml"
    p.write_text(DEP)
    adv = advise(load_deployment(p))
    rows = adv.rows(0.9)
    assert [(r["k"], r["policy"]) for r in rows] == [(1, "fresh"), (1, "share"), (3, "fresh"),
                                                     (3, "share")]
    for r in rows:
        iv = r["output_throughput"]
        assert 0 < iv.lo <= iv.median <= iv.hi
    k, policy, gain, robust = adv.recommendation(0.9)
    assert (k, policy) in {(r["k"], r["policy"]) for r in rows}
    assert robust == ((k, policy) == (adv.best_fresh(), "fresh") or gain.lo > 0)
    # the same draws in every cell: a k=1 cell sees k=3's parameter values
    assert len(adv.draws) == 4 and all(len(v) == 4 for v in adv.values.values())
    # k = 1 runs no draft step >= 1: sharing saves nothing there and only pays the row gather
    same = adv.share_vs_fresh(1)
    assert (same <= 0).all() and abs(same).max() < 0.5


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
