"""Multi-node vLLM serving: `engine.pp` and `vllm.distributed_executor_backend = "ray"` become
vLLM's own flags, which vLLM 0.33.0's parser reads back as tp x pp on the Ray backend; without
them the command line carries neither (vLLM's defaults)."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm.entrypoints.cli.serve")

from mtpsim.errors import SpecError  # noqa: E402
from mtpsim.spec import experiment_from_dict  # noqa: E402
from mtpsim.vllm_runner.argv import VLLM_CLI, vllm_serve_argv  # noqa: E402

EXP = {"model": {"name": "deepseek-ai/DeepSeek-V3.2"}, "engine": {"tp": 8, "pp": 2},
       "vllm": {"distributed_executor_backend": "ray"}}


pytestmark = pytest.mark.usefixtures("cpu_platform")


def _engine_args(argv):
    from vllm.engine.arg_utils import EngineArgs
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subcommand"))
    return EngineArgs.from_cli_args(parser.parse_args(argv[len(VLLM_CLI):]))


def test_tp_by_pp_on_the_ray_backend_parses():
    ea = _engine_args(vllm_serve_argv(experiment_from_dict(EXP), "share", 8000))
    assert (ea.tensor_parallel_size, ea.pipeline_parallel_size) == (8, 2)
    assert ea.distributed_executor_backend == "ray"


def test_defaults_leave_vllms_choice():
    argv = vllm_serve_argv(experiment_from_dict({"model": {"name": "x/y"}}), "fresh", 8000)
    assert "--distributed-executor-backend" not in argv and "--pipeline-parallel-size" not in argv
    ea = _engine_args(argv)
    assert ea.pipeline_parallel_size == 1


def test_extra_args_cannot_override_them():
    exp = experiment_from_dict({**EXP, "vllm": {"extra_args": ["--pipeline-parallel-size=4"]}})
    with pytest.raises(SpecError, match="engine.pp"):
        vllm_serve_argv(exp, "share", 8000)
