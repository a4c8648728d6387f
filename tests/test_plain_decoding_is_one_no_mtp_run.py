"""num_speculative_tokens = 0 is plain decoding: one run named no_mtp (the reuse policies would
be identical runs), acceptance length 1, no drafts, no MTP layer in the step cost or the memory;
first-class in simulate, sweep and advise, refused by the real engines in one line."""

import json

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.policies import NO_MTP, POLICIES
from mtpsim.sim.simulator import simulate
from mtpsim.spec import experiment_from_dict

BASE = {"model": {"preset": "deepseek-v3.2", "quantization": "nvfp4"},
        "hardware": {"preset": "b200"}, "engine": {"tp": 4},
        "workload": {"num_prompts": 24, "input_len": 1024, "output_len": 64,
                     "max_concurrency": 8}}


def _exp(k: int, **extra):
    return experiment_from_dict({**BASE, "speculative": {"num_speculative_tokens": k}, **extra})


def test_k0_collapses_the_policies_into_one_run_that_is_not_a_reuse_policy():
    exp = _exp(0, policies=["fresh", "share", "share_recent"])
    assert exp.policies == (NO_MTP,) and NO_MTP not in POLICIES
    assert _exp(3).policies == ("fresh", "share")


def test_k0_decodes_one_token_per_step_with_no_drafts():
    res = simulate(_exp(0), NO_MTP)
    m = res.metrics
    assert res.policy == NO_MTP
    assert m["spec_decode_acceptance_length"] == 1.0
    assert m["spec_decode_num_drafts"] == 0 and m["spec_decode_draft_tokens"] == 0
    assert m["spec_decode_accepted_tokens"] == 0 and "spec_decode_acceptance_rate" not in m
    assert all(r.num_drafts == 0 and r.num_accepted_tokens == 0 for r in res.requests)
    # every output token after the first costs one decode step: 24 x 63 decode steps' tokens
    assert m["total_output_tokens"] == 24 * 64
    for phase in ("draft_prefill", "draft_decode_indexer", "draft_decode_rest"):
        assert res.phases[phase] == 0.0
    assert res.phases["verify"] > 0 and res.phases["rejection_sample"] > 0


def test_k0_steps_are_cheaper_than_k3_steps_but_k3_makes_more_tokens_per_step():
    shape = StepShape(num_decode=8, decode_ctx=8 * 2000.0, decode_keys=8 * 2000.0, num_draft=8,
                      draft_ctx=8 * 2000.0, draft_keys=8 * 2000.0)
    plain = sum(CostModel(_exp(0), NO_MTP).step(shape).values())
    mtp = sum(CostModel(_exp(3), "fresh").step(shape).values())
    assert plain < mtp
    r0, r3 = simulate(_exp(0), NO_MTP), simulate(_exp(3), "fresh")
    assert r3.metrics["median_tpot_ms"] < r0.metrics["median_tpot_ms"]


def test_k0_loads_no_mtp_layer_and_caches_no_mtp_keys():
    c0, c3 = CostModel(_exp(0), NO_MTP), CostModel(_exp(3), "fresh")
    assert c0.weight_bytes_per_gpu() < c3.weight_bytes_per_gpu()
    m = _exp(0).model
    assert c3.kv_bytes_per_token() - c0.kv_bytes_per_token() == (m.kv_bytes_per_token
                                                                  + m.indexer_bytes_per_token)


def test_sweep_over_k_gives_k0_one_row(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[model]\nquantization = "nvfp4"\n[engine]\ntp = 4\n[workload]\nnum_prompts = 8\n'
                 'input_len = 512\noutput_len = 32\nmax_concurrency = 4\n')
    res = CliRunner().invoke(app, ["sweep", str(p), "--set", "speculative.num_speculative_tokens=0,2",
                                   "--json", "-j", "1"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["rows"]
    got = sorted((r["speculative.num_speculative_tokens"], r["policy"]) for r in rows)
    assert got == [(0, NO_MTP), (2, "fresh"), (2, "share")]


def test_advise_compares_every_k_with_plain_decoding(tmp_path):
    p = tmp_path / "dep.toml"
    p.write_text('[deployment]\nmodel = "deepseek-v3.2"\ngpu = "b200"\ntp = 4\nquantization = '
                 '"nvfp4"\n[workload]\ncontext_lengths = [1024]\nconcurrency = [2]\n'
                 'output_len = 32\n[advise]\nk = [2]\ndraws = 3\nmax_draws = 3\n')
    res = CliRunner().invoke(app, ["advise", str(p), "--json", "-j", "1"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    rows = {(r["k"], r["policy"]): r for r in out["rows"]}
    assert set(rows) == {(0, NO_MTP), (2, "fresh"), (2, "share")}
    g = rows[(2, "fresh")]["gain_vs_no_mtp_pct"]
    assert g["lo"] <= g["median"] <= g["hi"]
    assert any(v.startswith("MTP on: fresh k=2 against plain decoding") for v in out["verdict"])


@pytest.mark.parametrize("cmd", [["run-real"], ["serve-reference"]])
def test_real_engines_refuse_k0_in_one_line(tmp_path, cmd):
    p = tmp_path / "e.toml"
    p.write_text("[speculative]\nnum_speculative_tokens = 0\n")
    args = [*cmd, str(p)] if cmd == ["run-real"] else [*cmd, "--set",
                                                       "speculative.num_speculative_tokens=0"]
    if cmd == ["run-real"]:
        args += ["--out", str(tmp_path / "out")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "speculative.num_speculative_tokens" in res.output and "simulated only" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_k0_intervals_blame_no_acceptance_prior_and_point_at_a_measurement_that_runs(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[model]\nquantization = "nvfp4"\n[engine]\ntp = 4\n[speculative]\n'
                 'num_speculative_tokens = 0\n[workload]\nnum_prompts = 16\ninput_len = 1024\n'
                 'output_len = 32\nmax_concurrency = 4\n')
    res = CliRunner().invoke(app, ["simulate", str(p), "--uncertainty", "6", "-j", "1"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    table = res.output.split("Sensitivity of the no_mtp")[1].split("measure next")[0]
    for inert in ("critical_entries", "overlap_agreement", "request_sigma", "indexer_cost",
                  "critical_lk_exponent"):
        assert inert not in table  # nothing is drafted: these move no figure
    nxt = res.output.split("measure next")[1]
    assert "mtpsim calibrate" in nxt and "run-real" in nxt.split("#")[1]  # named, not run
    assert "calibration.measured.no_mtp" in nxt
