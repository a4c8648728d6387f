"""Which `vllm serve` settings extra arguments would change, asked of vLLM's own parser.

A list of spellings cannot guard the flags the runner owns: argparse accepts any unambiguous
prefix (`--hos=0.0.0.0`), vLLM adds aliases (`-sc`), underscores (`--speculative_config`),
dotted JSON keys (`--speculative-config.method=x`) and `--config FILE`. So the extra arguments
are parsed by the `vllm serve` parser of the installed vLLM into a namespace whose owned
destinations hold a sentinel: whatever is no longer the sentinel was set by them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mtpsim.errors import SpecError

# argparse destination -> how to set it instead. argparse keeps the last value: an extra
# `--host 0.0.0.0` would open the unauthenticated server to the network, `--port` would hide it
# from the health check and `--speculative-config` would override the policy.
RUNNER_OWNED: dict[str, str] = {"host": "always 127.0.0.1", "port": "set vllm.port instead",
                                "speculative_config": "from the policy and speculative.*",
                                "pipeline_parallel_size": "set engine.pp instead",
                                "data_parallel_size": "set engine.dp instead",
                                "enable_expert_parallel": "set engine.ep instead",
                                "distributed_executor_backend":
                                    "set vllm.distributed_executor_backend instead"}
# Settings the spec owns: the field to set instead (the result records the spec, so a flag
# that changed one of these would run something other than what the result says).
SPEC_OWNED: dict[str, str] = {
    "tensor_parallel_size": "set engine.tp instead", "max_num_seqs": "set engine.max_num_seqs instead",
    "max_num_batched_tokens": "set engine.max_num_batched_tokens instead",
    "gpu_memory_utilization": "set engine.gpu_memory_utilization instead",
    "enable_chunked_prefill": "set engine.enable_chunked_prefill instead",
    "enable_prefix_caching": "set vllm.enable_prefix_caching instead",
    "compilation_config": "set vllm.compilation_mode and engine.cudagraph_mode instead",
    "enforce_eager": "set engine.cudagraph_mode = 'none' instead (run-real --trace runs eager)",
    "quantization": "set model.quantization instead", "seed": "set seed instead",
    "model": "set model.name instead", "served_model_name": "set model.name instead",
    "tokenizer": "set model.name instead", "data_parallel_size_local": "set engine.dp instead",
    "spec_method": "from the policy and speculative.*", "spec_model": "from the policy",
    "spec_tokens": "set speculative.num_speculative_tokens instead",
    "kv_cache_dtype": "set engine.kv_cache_dtype instead",
    "max_model_len": "set engine.max_model_len instead",
}
# The positive list: what a user may add in [vllm] extra_args. Kernel, cache-layout, CUDA-graph
# capture, loading and logging choices: they change how fast the same model runs, never which
# model, policy or parallel layout runs, where the server listens or who may call it. Anything
# else is refused (a new vLLM flag too, until it is judged and added here).
USER_FLAGS: frozenset[str] = frozenset({
    "optimization_level", "kernel_config", "attention_backend", "attention_config",
    "moe_backend", "linear_backend", "sparse_indexer_topk_backend", "enable_flashinfer_autotune",
    "all2all_backend", "disable_custom_all_reduce", "disable_cascade_attn", "async_scheduling",
    "block_size", "kv_cache_memory_bytes",
    "num_gpu_blocks_override", "cudagraph_capture_sizes", "max_cudagraph_capture_size",
    "max_parallel_loading_workers", "safetensors_load_strategy", "use_tqdm_on_load",
    "download_dir", "uvicorn_log_level", "disable_uvicorn_access_log", "enable_log_requests",
    "max_log_len", "disable_fastapi_docs", "distributed_timeout_seconds", "shutdown_timeout",
})
_UNSET = object()


class _ParseError(Exception):
    pass


@contextlib.contextmanager
def _some_platform() -> Iterator[None]:
    """vLLM computes argument defaults from the current platform and fails without a device:
    build the parser as on vLLM's CPU platform there (only destinations are read, not
    defaults)."""
    import vllm.platforms

    if not vllm.platforms.current_platform.is_unspecified():
        yield
        return
    from vllm.platforms.cpu import CpuPlatform

    saved = vllm.platforms._current_platform
    vllm.platforms._current_platform = CpuPlatform()
    try:
        yield
    finally:
        vllm.platforms._current_platform = saved


@functools.cache
def serve_parser() -> argparse.ArgumentParser:
    """The installed vLLM's `vllm serve` sub-parser (built once per process)."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    with _some_platform():
        top = FlexibleArgumentParser()
        parser: argparse.ArgumentParser = ServeSubcommand().subparser_init(
            top.add_subparsers(dest="subcommand"))
    return parser


def aliases(dest: str) -> list[str]:
    """Every option string vLLM's serve parser declares for `dest` (e.g. `-sc`)."""
    return [s for a in serve_parser()._actions if a.dest == dest for s in a.option_strings]


def settings_changed(extra_args: Sequence[str], dests: Sequence[str]) -> dict[str, Any]:
    """dest -> value for each of `dests` that `extra_args` set, as `vllm serve` would parse
    them after a model name. Raises ValueError with vLLM's message if it rejects them."""
    parser = serve_parser()
    # a sentinel per destination; append-style options extend theirs, so theirs is an empty
    # list object: set means "no longer that very object"
    kinds = (argparse._AppendAction, argparse._ExtendAction, argparse._AppendConstAction)
    appends = {a.dest for a in parser._actions if isinstance(a, kinds)}
    marks: dict[str, Any] = {d: [] if d in appends else _UNSET for d in dests}
    ns = argparse.Namespace(**marks)

    def fail(message: str) -> None:
        raise _ParseError(message)

    saved = parser.error
    parser.error = fail  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            parser.parse_args(["model", *extra_args], namespace=ns)
    except _ParseError as e:
        raise ValueError(str(e)) from None
    except SystemExit:  # --help and the like print and exit
        raise ValueError("an argument that prints and exits (--help?)") from None
    except (OSError, ValueError, TypeError, KeyError) as e:  # --config FILE unreadable / bad
        raise ValueError(f"{type(e).__name__}: {e}") from None
    finally:
        parser.error = saved  # type: ignore[method-assign]
    return {d: getattr(ns, d) for d in dests if getattr(ns, d) is not marks[d]}


def all_settings() -> list[str]:
    """Every destination of vLLM's serve options."""
    return sorted({a.dest for a in serve_parser()._actions if a.option_strings and a.dest != "help"})


def check_extra_args(extra_args: Sequence[str], source: str | Path | None,
                     owned: Mapping[str, str] = RUNNER_OWNED) -> None:
    """SpecError naming `vllm.extra_args` if vLLM's parser rejects them, they set a setting the
    runner or the spec owns (whatever the spelling; the message names the field to use), or
    one not on the USER_FLAGS list."""
    if not extra_args:
        return
    try:
        changed = settings_changed(extra_args, all_settings())
    except ValueError as e:
        raise SpecError(source, "vllm.extra_args", f"expected arguments `vllm serve` accepts; its "
                        f"parser says: {e}") from None
    for dest, value in changed.items():
        flags = "/".join(aliases(dest)) or dest
        if dest in owned:
            raise SpecError(source, "vllm.extra_args", f"expected no argument that sets {flags} "
                            f"(it set {value!r}); the runner sets it ({owned[dest]})")
        if dest in SPEC_OWNED:
            raise SpecError(source, "vllm.extra_args", f"expected no argument that sets {flags} "
                            f"(it set {value!r}); the spec owns it ({SPEC_OWNED[dest]})")
        if dest not in USER_FLAGS:
            raise SpecError(source, "vllm.extra_args", f"expected only kernel, cache and logging "
                            f"flags (USER_FLAGS in mtpsim/vllm_runner/owned_flags.py), got {flags}: "
                            "it changes what runs, where it listens or who may call it")


# [vllm] env: a positive list too. The runner owns the plugin's settings and Model Runner V2;
# variables that load other code, move the listener or change what vLLM runs are refused.
RUNNER_ENV: dict[str, str] = {
    "VLLM_USE_V2_MODEL_RUNNER": "the plugin patches Model Runner V2; the runner sets it to 1",
    "VLLM_PLUGINS": "the runner needs the mtpsim plugin loaded",
    "MTPSIM_POLICY": "the runner sets the policy from -p / policies",
    "MTPSIM_TRACE": "set by run-real --trace", "MTPSIM_TRACE_DIR": "the runner picks the folder",
}
USER_ENV: frozenset[str] = frozenset({
    "HF_HOME", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_ENABLE_HF_TRANSFER",
    "RAY_ADDRESS", "VLLM_LOGGING_LEVEL", "VLLM_CACHE_ROOT", "VLLM_RPC_TIMEOUT",
    "VLLM_ENGINE_READY_TIMEOUT_S", "VLLM_USE_DEEP_GEMM", "VLLM_DEEP_GEMM_WARMUP",
    "VLLM_USE_FLASHINFER_SAMPLER", "VLLM_USE_FLASHINFER_MOE_FP4", "VLLM_USE_FLASHINFER_MOE_FP8",
    "VLLM_FLASHINFER_MOE_BACKEND", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
    "CUDA_DEVICE_MAX_CONNECTIONS", "OMP_NUM_THREADS",
})
USER_ENV_PREFIXES = ("NCCL_",)  # collective tuning (NCCL_IB_*, NCCL_DEBUG, ...)


def check_env(env: Mapping[str, str], source: str | Path | None) -> None:
    """SpecError naming `vllm.env.<NAME>` for a variable the runner owns or one not listed."""
    for name in env:
        if name in RUNNER_ENV:
            raise SpecError(source, f"vllm.env.{name}", f"expected no runner-owned variable "
                            f"({RUNNER_ENV[name]})")
        if name not in USER_ENV and not name.startswith(USER_ENV_PREFIXES):
            raise SpecError(source, f"vllm.env.{name}", "expected a variable on the list a user may "
                            "set (USER_ENV in mtpsim/vllm_runner/owned_flags.py: caches, Hugging "
                            "Face, Ray address, logging, kernel and NCCL tuning); others change "
                            "which code runs or where it listens")
