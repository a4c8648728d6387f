"""`vllm.extra_args` are appended to `vllm serve`, whose parser keeps the last value: whatever
their spelling (abbreviation, alias, underscores, dotted JSON key, `--config FILE`) they must
not rebind the server beyond 127.0.0.1, move its port away from the health check or replace
the policy's `--speculative-config`. vLLM 0.33.0's own parser decides what they set."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm.entrypoints.cli.serve")

from mtpsim.errors import SpecError  # noqa: E402
from mtpsim.spec import experiment_from_dict  # noqa: E402
from mtpsim.vllm_runner.argv import HOST, vllm_serve_argv  # noqa: E402
from mtpsim.vllm_runner.owned_flags import aliases  # noqa: E402

FIELDS = {"method": str, "num_speculative_tokens": int, "index_share_for_mtp_iteration": bool}


def _argv(*extra: str) -> list[str]:
    exp = experiment_from_dict({"model": {"name": "deepseek-ai/DeepSeek-V3.2"},
                                "vllm": {"extra_args": list(extra)}}, source="exp.toml")
    return vllm_serve_argv(exp, "share", 8000, spec_fields=FIELDS)


@pytest.mark.parametrize(("extra", "flag"), [
    (("--host", "0.0.0.0"), "--host"), (("--host=0.0.0.0",), "--host"),
    (("--hos=0.0.0.0",), "--host"), (("--ho", "0.0.0.0"), "--host"),
    (("--port", "9"), "--port"), (("--por=9",), "--port"),
    (("--speculative_config", "{}"), "--speculative-config"),
    (("-sc", "{}"), "--speculative-config"), (("--speculative-conf={}",), "--speculative-config"),
    (("--speculative-config.num_speculative_tokens=5",), "--speculative-config"),
])
def test_any_spelling_of_a_runner_flag_is_a_spec_error(extra, flag):
    with pytest.raises(SpecError) as e:
        _argv(*extra)
    msg = e.value.message()
    assert msg.startswith("exp.toml: vllm.extra_args: expected no argument that sets ")
    assert flag in msg and "the runner sets it" in msg


def test_the_hos_abbreviation_is_refused_before_it_reaches_vllm():
    with pytest.raises(SpecError, match=r"sets --host \(it set '0\.0\.0\.0'\)"):
        _argv("-O3", "--hos=0.0.0.0")


def test_a_config_file_that_sets_the_host_is_refused(tmp_path):
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("host: 0.0.0.0\n")
    with pytest.raises(SpecError, match="sets --host"):
        _argv("--config", str(cfg))


def test_the_aliases_come_from_vllms_parser():
    assert aliases("speculative_config") == ["--speculative-config", "-sc"]
    assert aliases("host") == ["--host"]


def test_arguments_vllm_rejects_are_one_spec_error_naming_vllms_complaint():
    with pytest.raises(SpecError) as e:
        _argv("--no-such-flag")
    assert "unrecognized arguments: --no-such-flag" in e.value.message()
    assert "\n" not in e.value.message()


def test_other_extra_args_follow_the_runners_own():
    argv = _argv("-O3", "--block-size", "128", "--kernel-config.enable_flashinfer_autotune=False")
    assert argv[argv.index("--host") + 1] == HOST
    assert argv[-4:] == ["-O3", "--block-size", "128",
                         "--kernel-config.enable_flashinfer_autotune=False"]
