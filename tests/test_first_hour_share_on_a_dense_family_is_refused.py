"""A reuse policy (`share`, `share_recent`, `target_share`) on a model family without a
lightning indexer (`mla`: DeepSeek-V3/R1) has no top-k row to reuse: simulate, sweep, run-real
and advise refuse it before any work with one line naming the file and the `policies` field,
exit 2. Without `policies`, such a model runs `fresh` alone."""

from pathlib import Path

import pytest
from _cli import one_error_line

from mtpsim.errors import SpecError
from mtpsim.spec import experiment_from_dict
from mtpsim.uncertainty.advise import load_deployment

ROOT = Path(__file__).resolve().parents[1]
R1 = ('[model]\npreset = "deepseek-v3"\n[hardware]\npreset = "h200"\n[engine]\ntp = 8\n'
      "[speculative]\nnum_speculative_tokens = 2\n[workload]\nnum_prompts = 8\n")


def _one_line(args: list[str]) -> str:
    return one_error_line(*args, quiet_stdout=True)


@pytest.mark.parametrize("policies", [["fresh", "share"], ["share_recent"], ["target_share"]])
def test_a_reuse_policy_on_the_mla_family_is_a_spec_error(policies):
    raw = {"model": {"preset": "deepseek-v3"}, "hardware": {"preset": "h200"},
           "engine": {"tp": 8}, "policies": policies}
    with pytest.raises(SpecError) as e:
        experiment_from_dict(raw, source="r1.toml")
    assert str(e.value).startswith("r1.toml: policies: expected only fresh for model.family 'mla'")
    assert policies[-1] in str(e.value)


def test_without_policies_a_dense_family_runs_fresh_alone_and_dsa_both():
    raw = {"hardware": {"preset": "h200"}, "engine": {"tp": 8}}
    assert experiment_from_dict({**raw, "model": {"preset": "deepseek-v3"}}).policies == ("fresh",)
    assert experiment_from_dict({**raw, "model": {"preset": "deepseek-v3.2"}}).policies == (
        "fresh", "share")


@pytest.mark.parametrize("command", [
    ["simulate", "{f}", "--set", "policies=fresh,share", "-j", "1"],
    ["sweep", "{f}", "--set", "policies=fresh,share", "--set", "workload.num_prompts=8,16",
     "-j", "1"],
    ["run-real", "{f}", "--engine", "vllm", "--out", "{out}", "--policy", "share"],
    ["run-real", "{f}", "--engine", "reference", "--out", "{out}", "--policy", "share"],
])
def test_every_command_refuses_share_on_mla_in_one_line(tmp_path, command):
    f = tmp_path / "r1.toml"
    f.write_text(R1)
    out = tmp_path / "out"
    line = _one_line([a.format(f=f, out=out) for a in command])
    assert "policies" in line and "'mla'" in line and "share" in line, line
    assert not out.exists()  # refused before anything was written


def test_a_model_switched_to_mla_names_the_file_that_lists_share(tmp_path):
    line = _one_line(["simulate", "experiments/pr47352.toml", "--set", "model.preset=deepseek-v3"])
    assert line.startswith("error: experiments/pr47352.toml: policies: expected only fresh"), line


def _deployment(tmp_path, advise: str) -> Path:
    f = tmp_path / "dep.toml"
    f.write_text('[deployment]\nmodel = "deepseek-v3"\ngpu = "h200"\ntp = 8\nquantization = "fp8"\n'
                 f"[workload]\ncontext_lengths = [1024]\nconcurrency = [8]\n[advise]\nk = [1]\n{advise}")
    return f


def test_advise_refuses_share_for_an_mla_model_and_defaults_to_fresh(tmp_path):
    line = _one_line(["advise", str(_deployment(tmp_path, 'policies = ["fresh", "share"]\n')),
                      "--draws", "16", "-j", "1"])
    assert "dep.toml: advise.policies: expected only fresh for model 'deepseek-v3'" in line, line
    assert load_deployment(_deployment(tmp_path, "")).policies == ("fresh",)
