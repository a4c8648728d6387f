"""The SGLang backend, checked on the CPU (SGLang cannot serve here): its `launch_server`
command line carries DeepSeek-V3.2 MTP as SGLang documents it (EAGLE, k steps, one candidate,
k + 1 draft tokens) with the policy as the model config's index_share_for_mtp_iteration; it
refuses what SGLang cannot run; its acceptance gauges are read from SGLang's /metrics text."""

from __future__ import annotations

import json
import sys

import pytest

from mtpsim.errors import UserError
from mtpsim.real import backend
from mtpsim.real.sglang import read_gauges, sglang_serve_argv
from mtpsim.spec import experiment_from_dict

EXP = {"model": {"name": "deepseek-ai/DeepSeek-V3.2"}, "seed": 7,
       "engine": {"tp": 8, "max_num_seqs": 64},
       "speculative": {"num_speculative_tokens": 3}}


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("policy, shared", [("fresh", False), ("share", True)])
def test_the_policy_is_the_index_share_override_with_one_eagle_candidate(policy, shared):
    argv = sglang_serve_argv(experiment_from_dict(EXP), policy, 30123)
    assert argv[:3] == [sys.executable, "-m", "sglang.launch_server"]
    assert _flag(argv, "--model-path") == "deepseek-ai/DeepSeek-V3.2"
    assert (_flag(argv, "--host"), _flag(argv, "--port")) == ("127.0.0.1", "30123")
    assert _flag(argv, "--speculative-algorithm") == "EAGLE"
    assert _flag(argv, "--speculative-num-steps") == "3"
    assert _flag(argv, "--speculative-num-draft-tokens") == "4"
    assert _flag(argv, "--speculative-eagle-topk") == "1"  # SGLang shares only with topk 1
    assert json.loads(_flag(argv, "--json-model-override-args")) == {
        "index_share_for_mtp_iteration": shared}
    assert (_flag(argv, "--tp-size"), _flag(argv, "--max-running-requests")) == ("8", "64")
    assert _flag(argv, "--random-seed") == "7" and "--enable-metrics" in argv
    assert "--pp-size" not in argv and "--chunked-prefill-size" not in argv


def test_pipeline_parallelism_and_no_chunked_prefill_map_to_sglangs_flags():
    exp = experiment_from_dict({**EXP, "engine": {"tp": 4, "pp": 2, "enable_chunked_prefill": False}})
    argv = sglang_serve_argv(exp, "share", 30000)
    assert _flag(argv, "--pp-size") == "2" and _flag(argv, "--chunked-prefill-size") == "-1"


def test_what_sglang_cannot_run_is_refused_before_a_server_starts(tmp_path):
    sg = backend("sglang")
    for raw, field in [({**EXP, "policies": ["share_recent"]}, "policies"),
                       ({**EXP, "model": {"name": ""}}, "model.name"),
                       ({**EXP, "vllm": {"distributed_executor_backend": "ray"}},
                        "vllm.distributed_executor_backend"),
                       ({**EXP, "vllm": {"extra_args": ["-O3"]}}, "vllm.extra_args")]:
        exp = experiment_from_dict(raw)
        with pytest.raises(UserError) as e:
            sg.refuse(exp, exp.policies)
        assert field in e.value.message()
    with pytest.raises(UserError, match="share_recent"):  # serving checks its own policy too
        sg.serve(experiment_from_dict(EXP), "share_recent", 30000, None, tmp_path)
    caps = sg.caps
    assert caps.served and caps.gpus and not caps.trace_mode and not caps.smoke
    assert caps.policies == ("fresh", "share") and caps.parallelism == ("engine.tp", "engine.pp")


def test_the_acceptance_gauges_are_averaged_over_ranks_and_nothing_else_is_read():
    text = "\n".join([
        "# HELP sglang:spec_accept_length The average acceptance length",
        "# TYPE sglang:spec_accept_length gauge",
        'sglang:spec_accept_length{dp_rank="0",model_name="m",tp_rank="0"} 2.5',
        'sglang:spec_accept_length{dp_rank="1",model_name="m",tp_rank="0"} 3.5',
        'sglang:spec_accept_rate{dp_rank="0",model_name="m",tp_rank="0"} 0.6',
        'sglang:spec_accept_rate{dp_rank="1",model_name="m",tp_rank="0"} NaN',
        'sglang:num_running_reqs{model_name="m"} 4.0'])
    assert read_gauges(text) == {"sglang:spec_accept_length": 3.0, "sglang:spec_accept_rate": 0.6}
    assert read_gauges("") == {}


def test_a_run_real_on_sglang_is_one_line_when_sglang_is_not_installed(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from mtpsim import extras
    from mtpsim.cli import app

    installed = extras.missing
    monkeypatch.setattr(extras, "missing", lambda m: m == "sglang" or installed(m))
    r = CliRunner().invoke(app, ["run-real", "experiments/pr47352.toml", "--engine", "sglang",
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "--engine sglang" in r.output and "sglang" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "o").exists()
