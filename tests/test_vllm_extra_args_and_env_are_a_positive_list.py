"""`[vllm] extra_args` and `[vllm] env` are positive lists: a user may add kernel, cache-layout,
CUDA-graph, loading and logging choices, nothing that changes which model, policy or parallel
layout runs, where the server listens, who may call it or which code loads; a setting the spec
owns is refused with the field to set instead; the runner's own variables cannot be
overridden. vLLM 0.33.0's own serve parser says what each argument sets."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm.entrypoints.cli.serve")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mtpsim.errors import SpecError  # noqa: E402
from mtpsim.spec import experiment_from_dict  # noqa: E402
from mtpsim.vllm_runner.argv import vllm_serve_argv, vllm_serve_env  # noqa: E402
from mtpsim.vllm_runner.owned_flags import (  # noqa: E402
    RUNNER_ENV,
    USER_ENV,
    USER_FLAGS,
    serve_parser,
)

FIELDS = {"method": str, "num_speculative_tokens": int, "index_share_for_mtp_iteration": bool}


def _exp(extra=(), env=None):
    return experiment_from_dict({"model": {"name": "deepseek-ai/DeepSeek-V3.2"},
                                 "vllm": {"extra_args": list(extra), "env": env or {}}},
                                source="exp.toml")


def _refused(*extra: str) -> str:
    with pytest.raises(SpecError) as e:
        vllm_serve_argv(_exp(extra), "share", 8000, spec_fields=FIELDS)
    msg = e.value.message()
    assert msg.startswith("exp.toml: vllm.extra_args: expected ") and "\n" not in msg
    return msg


@pytest.mark.parametrize("extra", [
    ("--data-parallel-address", "0.0.0.0", "--data-parallel-size", "2"), ("--headless",),
    ("--uds", "/tmp/x.sock"), ("--middleware", "evil.Middleware"),
    ("--worker-extension-cls", "evil.Ext"), ("--trust-remote-code",), ("--api-key", "k"),
    ("--load-format", "dummy"), ("--served-model-name", "other"),
])
def test_flags_that_change_what_runs_or_where_it_listens_are_refused(extra):
    _refused(*extra)


@pytest.mark.parametrize("extra, field", [
    (("-tp", "8"), "engine.tp"), (("--max-num-seqs", "4"), "engine.max_num_seqs"),
    (("--compilation-config", "{}"), "vllm.compilation_mode"),
    (("--enable-prefix-caching",), "vllm.enable_prefix_caching"),
    (("--enforce-eager",), "engine.cudagraph_mode"), (("--seed", "3"), "set seed instead"),
    (("--kv-cache-dtype", "fp8"), "engine.kv_cache_dtype"),
    (("--max-model-len", "4096"), "engine.max_model_len"),
])
def test_spec_owned_settings_name_the_field_to_set_instead(extra, field):
    msg = _refused(*extra)
    assert "the spec owns it" in msg and field in msg


def test_listed_tuning_flags_pass_after_the_runners_own():
    argv = vllm_serve_argv(_exp(("-O3", "--num-gpu-blocks-override", "64", "--block-size", "64",
                                 "--kernel-config.enable_flashinfer_autotune=False")),
                           "share", 8000, spec_fields=FIELDS)
    assert argv[-6:] == ["-O3", "--num-gpu-blocks-override", "64", "--block-size", "64",
                         "--kernel-config.enable_flashinfer_autotune=False"]


_SWITCHES = sorted({(a.option_strings[0], a.dest) for a in serve_parser()._actions
                    if a.option_strings and a.nargs == 0 and a.dest not in ("help",)})


@settings(max_examples=40, deadline=None, database=None)
@given(switch=st.sampled_from(_SWITCHES))
def test_every_switch_off_the_list_is_refused(switch):
    flag, dest = switch
    if dest in USER_FLAGS:
        vllm_serve_argv(_exp((flag,)), "share", 8000, spec_fields=FIELDS)
    else:
        _refused(flag)


@settings(max_examples=40, deadline=None, database=None)
@given(name=st.sampled_from([*RUNNER_ENV, "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH",
                             "VLLM_HOST_IP", "VLLM_PORT", "CUDA_VISIBLE_DEVICES"])
       | st.from_regex(r"[A-Z][A-Z0-9_]{0,20}", fullmatch=True))
def test_env_variables_off_the_list_are_refused_and_the_runners_win(name):
    exp = _exp(env={name: "x"})
    if name in USER_ENV or name.startswith("NCCL_"):
        env = vllm_serve_env(exp, "fresh", Path("/tmp/t"), False)
        assert env[name] == "x" and env["MTPSIM_POLICY"] == "fresh"
        assert env["VLLM_USE_V2_MODEL_RUNNER"] == "1"
        return
    with pytest.raises(SpecError) as e:
        vllm_serve_env(exp, "fresh", Path("/tmp/t"), False)
    assert e.value.message().startswith(f"exp.toml: vllm.env.{name}: expected ")
