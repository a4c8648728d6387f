"""Optional extras: which modules each needs and how to install it, checked before any work, so a
base install (`pip install -e .`) gets one line naming the extra instead of a traceback."""

from __future__ import annotations

import importlib.util

from mtpsim.errors import UserError

# extra -> (modules it provides, how to install it). pyproject.toml's optional-dependencies.
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "reference": (("torch", "safetensors"), "pip install -e '.[reference]'"),
    "serve": (("fastapi", "uvicorn", "aiohttp", "prometheus_client"), "pip install -e '.[serve]'"),
    "plots": (("matplotlib",), "pip install -e '.[plots]'"),
    "ray": (("ray",), "pip install -e '.[ray]'"),
    # vLLM brings its own CUDA torch and needs a GPU node: its install route is a page, not a line.
    "vllm": (("vllm",), "on a GPU node, follow docs/real-mode.md (pip install vllm==0.33.0)"),
    "sglang": (("sglang",), "on a GPU node, install SGLang (https://docs.sglang.io)"),
}


def missing(module: str) -> bool:
    """True if `module` cannot be imported here (found without importing it: fast)."""
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package missing, or a module set to None
        return True


def require(flag: str, *extras: str) -> None:
    """Raise the one-line error for the first extra `flag` needs that is not installed."""
    for extra in extras:
        modules, install = EXTRAS[extra]
        if absent := [m for m in modules if missing(m)]:
            raise UserError(None, flag, f"needs the '{extra}' extra ({', '.join(absent)} not "
                            f"installed): {install}")


def require_engine(engine: str, server: bool = False) -> None:
    """The extras a real run on `engine` needs (its backend's, mtpsim.real): the reference
    engine in-process (torch), behind `serve-reference` (torch and the HTTP server), or a
    served engine (the engine and the benchmark client)."""
    from mtpsim.real import backend

    b = backend(engine, server)
    require(b.flag, *b.caps.extras)
