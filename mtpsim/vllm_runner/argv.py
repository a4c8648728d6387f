"""Command lines and environments for the servers and `vllm bench serve`, built from the spec
as argument lists (no shell ever parses them)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mtpsim.serve_reference.server import HOST
from mtpsim.spec import Experiment
from mtpsim.vllm_plugin.settings import PluginSettings, policy_speculative_config
from mtpsim.vllm_runner.owned_flags import RUNNER_OWNED, check_env, check_extra_args

# -P: the working folder is not put on sys.path, so a folder named `mtpsim` or `vllm` where
# the user stands cannot replace the installed packages in the child.
VLLM_CLI = [sys.executable, "-P", "-m", "vllm.entrypoints.cli.main"]
MTPSIM_CLI = [sys.executable, "-P", "-m", "mtpsim"]


def speculative_config(exp: Experiment, policy: str,
                       fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    base: dict[str, Any] = {"method": exp.speculative.method,
                            "num_speculative_tokens": exp.k}
    return policy_speculative_config(policy, base, fields)


def compilation_config(exp: Experiment, trace: bool) -> dict[str, Any]:
    # Trace mode needs every draft step to run Python (module hooks): no graphs, no compile.
    if trace:
        return {"cudagraph_mode": "none", "mode": 0}
    return {"cudagraph_mode": exp.engine.cudagraph_mode, "mode": exp.vllm.compilation_mode}


def vllm_serve_argv(exp: Experiment, policy: str, port: int, *, trace: bool = False,
                    spec_fields: Mapping[str, Any] | None = None,
                    smoke: bool = False) -> list[str]:
    """`vllm serve` for one policy, as the PR's benchmark ran it (`smoke`: dummy weights of
    the shipped shrunken model, `mtpsim.vllm_runner.smoke`)."""
    if not exp.model.name:
        raise ValueError("expected the Hugging Face id vllm serves (e.g. \"deepseek-ai/DeepSeek-V3.2\"), "
                         "got none; or --smoke, which serves the shipped shrunken model")
    e = exp.engine
    argv = [*VLLM_CLI, "serve", exp.model.name, "--host", HOST, "--port", str(port),
            "--tensor-parallel-size", str(e.tp), "--max-num-seqs", str(e.max_num_seqs),
            "--max-num-batched-tokens", str(e.max_num_batched_tokens),
            "--gpu-memory-utilization", repr(e.gpu_memory_utilization),
            "--enable-chunked-prefill" if e.enable_chunked_prefill
            else "--no-enable-chunked-prefill",
            "--enable-prefix-caching" if exp.vllm.enable_prefix_caching
            else "--no-enable-prefix-caching",
            "--speculative-config", json.dumps(speculative_config(exp, policy, spec_fields)),
            "--compilation-config", json.dumps(compilation_config(exp, trace))]
    if e.pp > 1:
        argv += ["--pipeline-parallel-size", str(e.pp)]
    if e.dp > 1:
        argv += ["--data-parallel-size", str(e.dp)]
    if e.ep:
        argv.append("--enable-expert-parallel")
    if e.max_model_len:
        argv += ["--max-model-len", str(e.max_model_len)]
    if e.kv_cache_dtype != "auto":
        argv += ["--kv-cache-dtype", e.kv_cache_dtype]
    if exp.vllm.distributed_executor_backend:
        argv += ["--distributed-executor-backend", exp.vllm.distributed_executor_backend]
    if trace:
        argv.append("--enforce-eager")
    owned = RUNNER_OWNED
    if smoke:
        from mtpsim.vllm_runner import smoke as smoke_run

        argv += smoke_run.serve_args(exp.workload.input_len, exp.workload.output_len, exp.k)
        owned = {**RUNNER_OWNED, **smoke_run.OWNED}
    # Whatever the spelling (prefixes, -sc, dotted keys, --config FILE): vLLM's parser decides.
    check_extra_args(exp.vllm.extra_args, exp.source, owned)
    return argv + list(exp.vllm.extra_args)


def vllm_serve_env(exp: Experiment, policy: str, trace_dir: Path, trace: bool) -> dict[str, str]:
    """The spec's env (only listed variables), then Model Runner V2 on and the mtpsim plugin
    told the policy, which nothing in the spec can override."""
    check_env(exp.vllm.env, exp.source)  # before the runner's own: none may override them
    env = dict(exp.vllm.env)
    env["VLLM_USE_V2_MODEL_RUNNER"] = "1"
    env.update(PluginSettings(policy, trace_dir, trace).to_env())
    return env


def reference_serve_argv(exp: Experiment, policy: str, port: int, *, weights: str | None = None,
                         max_model_len: int | None = None) -> list[str]:
    """`mtpsim serve-reference` with every spec value it needs passed as a flag (a relative
    weights path as read from the experiment's folder)."""
    from mtpsim.spec.paths import resolved

    w = exp.workload
    need = w.input_len + w.output_len
    if w.input_len_distribution != "fixed" or w.output_len_distribution != "fixed":
        need = int(need * (1 + max(w.input_len_spread, w.output_len_spread)) * 3)
    argv = [*MTPSIM_CLI, "serve-reference", "--policy", policy, "--port", str(port),
            "--weights", weights or resolved(exp.source, "reference.weights", exp.reference.weights),
            "--max-model-len", str(max_model_len or need),
            "--max-num-seqs", str(min(exp.engine.max_num_seqs, w.max_concurrency or w.num_prompts)),
            "--exit-with-parent",
            "--set", f"speculative.num_speculative_tokens={exp.k}",
            "--set", f"reference.device={json.dumps(exp.reference.device)}",
            "--set", f"reference.threads={exp.reference.threads}",
            "--set", f"seed={exp.seed}"]
    if exp.speculative.index_topk is not None:
        argv += ["--set", f"speculative.index_topk={exp.speculative.index_topk}"]
    return argv


def vllm_bench_argv(exp: Experiment, base_url: str, result_dir: Path, filename: str, *,
                    reference_tokenizer: Path | None = None) -> list[str]:
    """`vllm bench serve` with the spec's workload; its `--save-result` JSON is the result.
    With `reference_tokenizer` it drives `mtpsim serve-reference` (completions, random
    prompts tokenized by the reference engine's byte-level tokenizer)."""
    w = exp.workload
    backend = "openai" if reference_tokenizer is not None else w.backend
    model = "mtpsim-reference" if reference_tokenizer is not None else exp.model.name
    argv = [*VLLM_CLI, "bench", "serve", "--backend", backend, "--base-url", base_url,
            "--endpoint", "/v1/chat/completions" if backend == "openai-chat"
            else "/v1/completions",
            "--model", model, "--num-prompts", str(w.num_prompts),
            "--request-rate", "inf" if math.isinf(w.request_rate) else repr(w.request_rate),
            "--burstiness", repr(w.burstiness), "--temperature", repr(w.temperature),
            "--seed", str(exp.seed), "--num-warmups", str(w.num_warmups),
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "90,99",
            "--save-result", "--result-dir", str(result_dir), "--result-filename", filename]
    if w.max_concurrency is not None:
        argv += ["--max-concurrency", str(w.max_concurrency)]
    if w.ignore_eos:
        argv.append("--ignore-eos")
    if w.top_p < 1.0:
        argv += ["--top-p", repr(w.top_p)]
    if reference_tokenizer is not None:
        argv += ["--tokenizer", str(reference_tokenizer)]
    if w.dataset == "speed-bench" and reference_tokenizer is None:
        argv += ["--dataset-name", "speed_bench", "--dataset-path", w.dataset_path,
                 "--speed-bench-dataset-subset", w.dataset_subset,
                 "--speed-bench-output-len", str(w.output_len)]
        if w.category:
            argv += ["--speed-bench-category", w.category]
    else:
        argv += ["--dataset-name", "random", "--random-input-len", str(w.input_len),
                 "--random-output-len", str(w.output_len)]
    return argv
