"""`mtpsim serve-reference`: the reference engine behind an OpenAI-compatible HTTP server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mtpsim.errors import UserError


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
    from mtpsim.policies import POLICIES
    from mtpsim.serve_reference.server import TINY_RANDOM, ServerOptions, serve
    from mtpsim.spec import experiment_from_dict, load_experiment

    if policy not in POLICIES:
        raise UserError(None, "--policy", f"expected one of {', '.join(POLICIES)}, got {policy!r}")
    if not 0 < port < 65536:
        raise UserError(None, "--port", f"expected 1..65535, got {port}")
    if max_num_seqs < 1 or max_model_len < 2:
        raise UserError(None, "--max-num-seqs" if max_num_seqs < 1 else "--max-model-len",
                        "expected a positive size")
    exp = (load_experiment(experiment, set_ or []) if experiment is not None
           else experiment_from_dict({}, overrides=set_ or []))
    from mtpsim.runs.real import refuse_plain_decoding

    refuse_plain_decoding(exp, "serve-reference")
    w = weights if weights is not None else exp.reference.weights
    from mtpsim.engine import weights as weights_mod

    if w in weights_mod.NAMED:
        path = weights_mod.NAMED[w]
        if not path.is_file():
            raise UserError(path, None, f"the shipped reference weights {w!r} are missing "
                            f"(present: {', '.join(weights_mod.available()) or 'none'}); pass "
                            f"--weights PATH or {TINY_RANDOM}")
    elif w != TINY_RANDOM:
        from mtpsim.engine.weights import sidecar

        if not Path(w).is_file():
            raise UserError(None, "--weights", f"expected builtin, small, base, large, {TINY_RANDOM} "
                            f"or a file, got {w!r}")
        if not sidecar(Path(w)).is_file():
            raise UserError(w, None, f"expected its config next to it in {sidecar(Path(w))} "
                            "(weights are saved as .safetensors + .json)")
    from mtpsim.serve_reference.limits import check_server_limits

    if w == TINY_RANDOM:
        config = {"n_layer": 1, "dim": 32, "index_head_dim": 8, "index_topk": 16}
    else:
        config = weights_mod.read_meta(weights_mod.resolve(w)).get("config") or {}
    check_server_limits(config if isinstance(config, dict) else {}, max_model_len, max_num_seqs,
                        exp.k, exp.speculative.index_topk)
    from mtpsim.engine.runner import resolve_device

    device = str(resolve_device(exp.reference.device))  # "cuda" with no GPU: a one-line error
    serve(ServerOptions(policy=policy, port=port, model_name=model_name, weights=w,
                        num_speculative_tokens=exp.k, index_topk=exp.speculative.index_topk,
                        max_num_seqs=max_num_seqs,
                        max_model_len=max_model_len, device=device,
                        threads=exp.reference.threads, seed=exp.seed,
                        exit_with_parent=exit_with_parent, quiet=quiet))
