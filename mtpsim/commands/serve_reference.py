"""`mtpsim serve-reference`: the reference engine behind an OpenAI-compatible HTTP server. The
checks and the server's options are mtpsim.runs.serve_reference's; this module parses and serves."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def serve_reference(
    experiment: Annotated[Path | None, typer.Argument(
        help="Experiment TOML for k, top-k and \\[reference] (default: the built-in defaults), "
        "e.g. experiments/reference-cpu.toml.")]
    = None,
    policy: Annotated[str, typer.Option(
        help="Top-k reuse policy of the MTP draft steps: fresh, share, share_recent or "
        "target_share, e.g. --policy fresh.")] = "share",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1, e.g. --port 8001.")] = 8000,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a spec field: section.key=value (repeatable), e.g. "
        "--set speculative.num_speculative_tokens=2.")] = None,
    weights: Annotated[str | None, typer.Option(
        help="A shipped size ('builtin' = 'base', 'small', 'large'), a .safetensors path, or "
        "'random-tiny' (an untrained 1-layer model for tests). Default: the spec's "
        "reference.weights. E.g. --weights small.")] = None,
    max_model_len: Annotated[int, typer.Option(
        help="Prompt + output tokens per request, e.g. --max-model-len 2048.")] = 4096,
    max_num_seqs: Annotated[int, typer.Option(
        help="Requests batched at once; the KV cache is preallocated for this many x "
        "--max-model-len, e.g. --max-num-seqs 4.")] = 8,
    model_name: Annotated[str, typer.Option(
        help="Model id the API reports and accepts, e.g. --model-name ref.")] = "mtpsim-reference",
    exit_with_parent: Annotated[bool, typer.Option(
        "--exit-with-parent", help="Stop when the launching process is gone, so a killed runner "
        "leaves no server behind (mtpsim run-real passes it).")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", help="No start-up line and no access log (one line per request, with its "
        "tokens and draft acceptance); errors still print.")] = False,
) -> None:
    """Serve the reference DSA + MTP engine on 127.0.0.1 behind an OpenAI-compatible API.

    Continuous batching; /v1/completions and /v1/chat/completions (streaming), /health, and a
    vLLM-format /metrics with the [cyan]vllm:spec_decode_*[/cyan] counters. Parameters it does
    not implement (n, logprobs, tools, top_p < 1, ...) are a 400 in vLLM's error format.
    It prints the URL once it listens, then one line per request.
    Example: [cyan]mtpsim serve-reference --policy share --port 8000[/cyan]
    """
    if exit_with_parent:  # first of all: the launcher may die while this process starts
        from mtpsim.serve_reference.server import launcher_pid, watch_parent

        watch_parent(launcher_pid())
    from mtpsim.extras import require

    require("serve-reference", "reference", "serve")
    from mtpsim.runs.serve_reference import options
    from mtpsim.serve_reference.server import serve

    serve(options(experiment, set_ or [], policy=policy, port=port, weights=weights,
                  max_model_len=max_model_len, max_num_seqs=max_num_seqs, model_name=model_name,
                  exit_with_parent=exit_with_parent, quiet=quiet))
