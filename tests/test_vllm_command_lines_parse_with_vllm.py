"""The `vllm serve` and `vllm bench serve` command lines built from the spec are argument
lists (no shell) that vLLM 0.33.0's own parsers accept with the intended values."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("vllm.entrypoints.cli.serve")

from mtpsim.spec import experiment_from_dict, load_experiment  # noqa: E402
from mtpsim.vllm_runner.argv import (  # noqa: E402
    VLLM_CLI,
    reference_serve_argv,
    vllm_bench_argv,
    vllm_serve_argv,
    vllm_serve_env,
)

EXP = {"model": {"name": "nvidia/DeepSeek-V3.2-NVFP4", "quantization": "nvfp4"},
       "engine": {"tp": 4, "max_num_seqs": 64, "max_num_batched_tokens": 16384},
       "workload": {"num_prompts": 256, "input_len": 10240, "output_len": 2048,
                    "max_concurrency": 32, "dataset": "speed-bench",
                    "dataset_path": "/data/speed-bench", "category": "low_entropy"},
       "vllm": {"extra_args": ["-O3", "--kernel-config.enable_flashinfer_autotune=False"],
                "env": {"VLLM_LOGGING_LEVEL": "INFO"}}}


pytestmark = pytest.mark.usefixtures("cpu_platform")


def _serve_parser():
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subcommand"))
    return parser


@pytest.mark.parametrize(("policy", "share"), [("fresh", False), ("share", True)])
def test_vllm_serve_parses_to_the_spec(policy, share):
    from vllm.engine.arg_utils import EngineArgs

    exp = experiment_from_dict(EXP)
    argv = vllm_serve_argv(exp, policy, 12345)
    assert all(isinstance(a, str) for a in argv) and argv[:len(VLLM_CLI)] == VLLM_CLI
    args = _serve_parser().parse_args(argv[len(VLLM_CLI):])
    assert (args.model_tag, args.host, args.port) == (exp.model.name, "127.0.0.1", 12345)
    ea = EngineArgs.from_cli_args(args)
    assert (ea.tensor_parallel_size, ea.max_num_seqs, ea.max_num_batched_tokens) == (4, 64, 16384)
    assert ea.enable_prefix_caching is False
    assert ea.speculative_config == {"method": "mtp", "num_speculative_tokens": 3,
                                     "index_share_for_mtp_iteration": share}
    assert ea.compilation_config.cudagraph_mode.name == "FULL_DECODE_ONLY"
    assert ea.compilation_config.mode == 0
    assert ea.enforce_eager is False


def test_trace_mode_runs_eager_without_graphs():
    from vllm.engine.arg_utils import EngineArgs

    exp = experiment_from_dict(EXP)
    ea = EngineArgs.from_cli_args(_serve_parser().parse_args(
        vllm_serve_argv(exp, "share", 1, trace=True)[len(VLLM_CLI):]))
    assert ea.enforce_eager is True
    assert ea.compilation_config.cudagraph_mode.name == "NONE"


def test_the_environment_selects_model_runner_v2_and_the_plugin(tmp_path):
    env = vllm_serve_env(experiment_from_dict(EXP), "share", tmp_path, trace=False)
    assert env["VLLM_USE_V2_MODEL_RUNNER"] == "1"
    assert (env["MTPSIM_POLICY"], env["MTPSIM_TRACE_DIR"]) == ("share", str(tmp_path))
    assert env["VLLM_LOGGING_LEVEL"] == "INFO"


def test_a_value_with_shell_metacharacters_stays_one_argument():
    exp = experiment_from_dict({**EXP, "model": {"name": "m; rm -rf / #"}})
    argv = vllm_serve_argv(exp, "fresh", 1)
    assert argv[argv.index("serve") + 1] == "m; rm -rf / #"


def test_vllm_bench_serve_parses_to_the_workload(tmp_path):
    from vllm.benchmarks.serve import add_cli_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    exp = experiment_from_dict(EXP)
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    argv = vllm_bench_argv(exp, "http://127.0.0.1:9", tmp_path, "fresh.json")
    args = parser.parse_args(argv[len(VLLM_CLI) + 2:])
    assert (args.backend, args.endpoint) == ("openai-chat", "/v1/chat/completions")
    assert (args.dataset_name, args.dataset_path) == ("speed_bench", "/data/speed-bench")
    assert (args.speed_bench_dataset_subset, args.speed_bench_category) == ("throughput_16k",
                                                                            "low_entropy")
    assert (args.num_prompts, args.max_concurrency, args.speed_bench_output_len) == (256, 32,
                                                                                     2048)
    assert math.isinf(args.request_rate) and args.ignore_eos and args.temperature == 1.0
    assert args.save_result and args.result_filename == "fresh.json"
    assert args.metric_percentiles == "90,99"


def test_the_shipped_pr_experiment_builds_the_prs_server(tmp_path):
    from vllm.engine.arg_utils import EngineArgs

    exp = load_experiment("experiments/pr47352.toml")
    argv = vllm_serve_argv(exp, "share", 8000)
    cfg = json.loads(argv[argv.index("--speculative-config") + 1])
    assert cfg["index_share_for_mtp_iteration"] is True
    args = _serve_parser().parse_args(argv[len(VLLM_CLI):])
    args.model = args.model_tag  # as `vllm serve` does before building the engine
    ea = EngineArgs.from_cli_args(args)
    assert (ea.model, ea.tensor_parallel_size, ea.max_num_seqs) == (
        "nvidia/DeepSeek-V3.2-NVFP4", 4, 64)
    assert str(ea.optimization_level) in ("3", "O3", "OptimizationLevel.O3")
    assert ea.compilation_config.mode == 0
    assert ea.compilation_config.cudagraph_mode.name == "FULL_DECODE_ONLY"
    assert ea.enable_prefix_caching is False
    ref = reference_serve_argv(exp, "share", 8001)
    assert ref[ref.index("--port") + 1] == "8001" and "--exit-with-parent" in ref
