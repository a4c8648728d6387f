"""`vllm.extra_args` are appended to `vllm serve`, whose parser keeps the last value: they must
not rebind the server beyond 127.0.0.1, move its port away from the health check or replace
the policy's `--speculative-config`."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic")

from mtpsim.errors import SpecError  # noqa: E402
from mtpsim.spec import experiment_from_dict  # noqa: E402
from mtpsim.vllm_runner.argv import HOST, vllm_serve_argv  # noqa: E402

FIELDS = {"method": str, "num_speculative_tokens": int, "index_share_for_mtp_iteration": bool}


def _argv(*extra: str) -> list[str]:
    exp = experiment_from_dict({"model": {"name": "deepseek-ai/DeepSeek-V3.2"},
                                "vllm": {"extra_args": list(extra)}}, source="exp.toml")
    return vllm_serve_argv(exp, "share", 8000, spec_fields=FIELDS)


@pytest.mark.parametrize("extra", [("--host", "0.0.0.0"), ("--host=0.0.0.0",), ("--port", "9"),
                                   ("--speculative_config", "{}")])
def test_a_runner_flag_in_extra_args_is_a_spec_error(extra):
    with pytest.raises(SpecError) as e:
        _argv(*extra)
    assert e.value.message().startswith("exp.toml: vllm.extra_args: expected no --")


def test_other_extra_args_follow_the_runners_own():
    argv = _argv("-O3", "--max-model-len", "16384")
    assert argv[argv.index("--host") + 1] == HOST
    assert argv[-3:] == ["-O3", "--max-model-len", "16384"]
