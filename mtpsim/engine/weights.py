"""Load and save reference weights: safetensors (never pickle) plus a JSON sidecar with the config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from mtpsim.engine.model import ModelArgs, Transformer
from mtpsim.errors import SpecError
from mtpsim.inputs import MiB, check_file, loads_json, read_text

BUILTIN = Path(__file__).parent / "weights" / "reference.safetensors"
MAX_WEIGHTS_BYTES = 16 * 1024 * MiB
# Shipped model sizes, trained with the same recipe (experiments/train_reference.py --size);
# "builtin" is "base", the default. Only a size whose file is present can be selected.
NAMED = {"builtin": BUILTIN, "base": BUILTIN,
         "small": BUILTIN.with_name("reference-small.safetensors"),
         "large": BUILTIN.with_name("reference-large.safetensors")}


def available() -> list[str]:
    """The shipped sizes whose weights are present (besides the alias 'builtin')."""
    return [n for n, p in NAMED.items() if n != "builtin" and p.is_file() and sidecar(p).is_file()]


def resolve(raw: str) -> Path:
    """A size name ('small', 'base' = 'builtin', 'large') or a path -> the .safetensors path."""
    return NAMED[raw] if raw in NAMED else Path(raw).expanduser()


def sidecar(path: Path) -> Path:
    return path.with_suffix(".json")


def fingerprint(path: Path) -> str:
    """SHA-256 of the weights' content (tensors, then the sidecar's config and metadata): what a
    result records, so a rerun resumes it only on the same weights, wherever they are."""
    import hashlib

    h = hashlib.sha256()
    for part in (path, sidecar(path)):
        with open(part, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def save(model: Transformer, path: Path, dtype: torch.dtype, meta: dict[str, Any]) -> None:
    """Write `path` (safetensors) and `path.with_suffix('.json')` ({"config": ..., **meta})."""
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    tmp = path.with_name(path.name + ".tmp")
    save_file(state, str(tmp))
    tmp.replace(path)
    side = sidecar(path)
    tmp_side = side.with_name(side.name + ".tmp")
    tmp_side.write_text(json.dumps({"config": model.args.to_dict(), **meta}, indent=2) + "\n")
    tmp_side.replace(side)


def load(path: Path | None = None, device: str | torch.device = "cpu",
         dtype: torch.dtype = torch.float32) -> Transformer:
    """Build the model from `path`'s sidecar config and load its tensors (default: the shipped weights)."""
    from safetensors.torch import load_file

    path = Path(path) if path is not None else BUILTIN
    try:
        model = Transformer(args_of(path))
    except (TypeError, ValueError, RuntimeError) as e:
        raise SpecError(sidecar(path), "config", f"expected the model settings ({e})") from None
    check_file(path, SpecError, "weights file", MAX_WEIGHTS_BYTES)
    try:
        state = load_file(str(path))
        model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    except Exception as e:  # safetensors raises its own error type; torch a RuntimeError
        raise _mismatch(path, f"{type(e).__name__}: {str(e)[:160]}") from None
    return model.to(device=device, dtype=dtype).eval()


def check(path: Path) -> None:
    """What `load` refuses that can be found before a run starts, without building the model
    or reading the tensors: a sidecar whose config is not model settings, and a file whose
    safetensors header does not read (a weights file that reads but does not match its config
    is refused by `load`, one line too)."""
    from safetensors import safe_open

    args_of(path)
    check_file(path, SpecError, "weights file", MAX_WEIGHTS_BYTES)
    try:
        with safe_open(str(path), "pt") as f:
            f.keys()
    except Exception as e:  # safetensors raises its own error type on a damaged header
        raise _mismatch(path, f"{type(e).__name__}: {str(e)[:160]}") from None


def args_of(path: Path) -> ModelArgs:
    """The model settings in `path`'s sidecar (one line if they are not)."""
    config = read_meta(path).get("config")
    if not isinstance(config, dict):
        raise SpecError(sidecar(path), "config", "expected an object of model settings")
    try:
        return ModelArgs(**config)
    except (TypeError, ValueError) as e:
        raise SpecError(sidecar(path), "config", f"expected the model settings ({e})") from None


def _mismatch(path: Path, why: str) -> SpecError:
    return SpecError(path, None, f"expected safetensors weights matching the config ({why})")


def read_meta(path: Path | None = None) -> dict[str, Any]:
    side = sidecar(Path(path) if path is not None else BUILTIN)
    meta = loads_json(read_text(side, SpecError, "weights config file", 16 * MiB), side, SpecError)
    if not isinstance(meta, dict):
        raise SpecError(side, None, "expected a JSON object ({\"config\": ...})")
    return meta
