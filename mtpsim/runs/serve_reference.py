"""The run behind `mtpsim serve-reference`: the flags and the experiment checked (one line each,
exit 2, before the engine loads), the weights found and sized against the server's limits, the
device chosen. The command serves the ServerOptions this returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtpsim.errors import UserError


def options(experiment: Path | None, sets: list[str], *, policy: str, port: int,
            weights: str | None, max_model_len: int, max_num_seqs: int, model_name: str,
            exit_with_parent: bool, quiet: bool) -> Any:
    """The server's options (mtpsim.serve_reference.server.ServerOptions) from the command's
    flags; `weights` None means the spec's reference.weights."""
    from mtpsim.engine.runner import resolve_device
    from mtpsim.real.reference import refuse_threads
    from mtpsim.runs.real import refuse_plain_decoding
    from mtpsim.serve_reference.limits import check_server_limits
    from mtpsim.serve_reference.server import ServerOptions
    from mtpsim.spec import experiment_from_dict, load_experiment

    check_flags(policy, port, max_num_seqs, max_model_len)
    from mtpsim.spec.paths import command_line_sets, resolved

    # a relative path in --set is from the current folder, in the file from the file's
    exp = (load_experiment(experiment, command_line_sets(experiment, sets)) if experiment is not None
           else experiment_from_dict({}, overrides=sets))
    refuse_plain_decoding(exp, "serve-reference")
    refuse_threads(exp)
    w = weights if weights is not None else resolved(exp.source, "reference.weights",
                                                      exp.reference.weights)
    check_server_limits(weights_config(w), max_model_len, max_num_seqs, exp.k,
                        exp.speculative.index_topk)
    device = str(resolve_device(exp.reference.device))  # "cuda" with no GPU: a one-line error
    return ServerOptions(policy=policy, port=port, model_name=model_name, weights=w,
                         num_speculative_tokens=exp.k, index_topk=exp.speculative.index_topk,
                         max_num_seqs=max_num_seqs, max_model_len=max_model_len, device=device,
                         threads=exp.reference.threads, seed=exp.seed,
                         exit_with_parent=exit_with_parent, quiet=quiet)


def check_flags(policy: str, port: int, max_num_seqs: int, max_model_len: int) -> None:
    from mtpsim.policies import POLICIES

    if policy not in POLICIES:
        raise UserError(None, "--policy", f"expected one of {', '.join(POLICIES)}, got {policy!r}")
    if not 0 < port < 65536:
        raise UserError(None, "--port", f"expected 1..65535, got {port}")
    if max_num_seqs < 1 or max_model_len < 2:
        raise UserError(None, "--max-num-seqs" if max_num_seqs < 1 else "--max-model-len",
                        "expected a positive size")


def weights_config(w: str) -> dict[str, Any]:
    """The model config the weights `w` (a shipped size, a path or TINY_RANDOM) were saved
    with; a missing file, or one without its .json sidecar, is a one-line error."""
    from mtpsim.engine import weights as weights_mod
    from mtpsim.serve_reference.server import TINY_RANDOM

    if w == TINY_RANDOM:
        return {"n_layer": 1, "dim": 32, "index_head_dim": 8, "index_topk": 16}
    if w in weights_mod.NAMED:
        path = weights_mod.NAMED[w]
        if not path.is_file():
            raise UserError(path, None, f"the shipped reference weights {w!r} are missing "
                            f"(present: {', '.join(weights_mod.available()) or 'none'}); pass "
                            f"--weights PATH or {TINY_RANDOM}")
    else:
        if not Path(w).is_file():
            raise UserError(None, "--weights", f"expected builtin, small, base, large, {TINY_RANDOM} "
                            f"or a file, got {w!r}")
        if not weights_mod.sidecar(Path(w)).is_file():
            raise UserError(w, None, f"expected its config next to it in {weights_mod.sidecar(Path(w))} "
                            "(weights are saved as .safetensors + .json)")
    config = weights_mod.read_meta(weights_mod.resolve(w)).get("config") or {}
    return config if isinstance(config, dict) else {}
