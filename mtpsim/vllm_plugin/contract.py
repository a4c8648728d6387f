"""The shape of vLLM's MTP speculator that the plugin was written against (vLLM 0.33.0).

Upstream changed these hooks three times (a callbacks Protocol without `num_reqs`, then
`on_prefill_end(num_reqs, num_tokens)`, then four `(self, num_reqs: int) -> None` methods on
`TargetDependentARSpeculator`); wrapping the wrong shape would fail silently on a GPU, so the
plugin refuses any other shape with a message naming the installed version.
"""

from __future__ import annotations

import inspect
from typing import Any

SUPPORTED_VLLM = "0.33.0"
MTP_MODULE = "vllm.v1.worker.gpu.spec_decode.mtp.speculator"
BASE_MODULE = "vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator"
HOOKS = ("on_prefill_begin", "on_prefill_end", "on_multi_step_decode_begin",
         "on_multi_step_decode_end")
SHARE_FLAG = "share_mtp_topk_indices"


class IncompatibleVllmError(RuntimeError):
    """The installed vLLM's MTP speculator differs from the shape the plugin supports."""


def installed_vllm_version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def load_speculator_classes() -> tuple[type, type]:
    """The real (MTPSpeculator, TargetDependentARSpeculator) classes of the installed vLLM."""
    import importlib

    try:
        mtp = importlib.import_module(MTP_MODULE)
        base = importlib.import_module(BASE_MODULE)
        return mtp.MTPSpeculator, base.TargetDependentARSpeculator
    except (ImportError, AttributeError) as e:
        raise IncompatibleVllmError(_message(installed_vllm_version(), f"cannot import the MTP "
                                             f"speculator ({e})")) from None


def _message(version: str, problem: str) -> str:
    return (f"mtpsim vLLM plugin: vLLM {version} is installed, and its MTP speculator differs "
            f"from the vLLM {SUPPORTED_VLLM} shape this plugin patches: {problem}. Install "
            f"vllm=={SUPPORTED_VLLM}, or unset MTPSIM_POLICY to run vLLM without mtpsim.")


def _hook_problem(cls: type, name: str) -> str | None:
    fn = inspect.getattr_static(cls, name, None)
    if fn is None or not callable(fn):
        return f"{cls.__name__}.{name} is missing"
    fn = getattr(fn, "__mtpsim_wrapped__", fn)
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    shape = f"{cls.__name__}.{name}{sig}"
    if [p.name for p in params] != ["self", "num_reqs"]:
        return f"{shape} should be (self, num_reqs: int) -> None"
    if any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        return f"{shape} should take two positional parameters"
    if params[1].annotation not in (int, "int", inspect.Parameter.empty):
        return f"{shape}: num_reqs should be an int"
    if sig.return_annotation not in (None, "None", inspect.Signature.empty):
        return f"{shape} should return None"
    return None


def check_speculator_shape(mtp_cls: type, base_cls: type, version: str | None = None) -> None:
    """Raise IncompatibleVllmError unless `mtp_cls` has the vLLM 0.33.0 MTP speculator shape."""
    version = version or installed_vllm_version()
    problems: list[str] = []
    if not (isinstance(mtp_cls, type) and isinstance(base_cls, type)
            and issubclass(mtp_cls, base_cls)):
        problems.append(f"{getattr(mtp_cls, '__name__', mtp_cls)} does not subclass "
                        f"{getattr(base_cls, '__name__', base_cls)}")
    else:
        for name in HOOKS:
            for cls in (base_cls, mtp_cls):
                if (p := _hook_problem(cls, name)) is not None:
                    problems.append(p)
            if name not in vars(mtp_cls):
                problems.append(f"{mtp_cls.__name__} does not override {name}")
        flag: Any = inspect.getattr_static(mtp_cls, SHARE_FLAG, None)
        if not isinstance(flag, bool):
            problems.append(f"{mtp_cls.__name__}.{SHARE_FLAG} (a bool) is missing")
        if "load_draft_model" not in vars(mtp_cls):
            problems.append(f"{mtp_cls.__name__}.load_draft_model is missing")
    if problems:
        raise IncompatibleVllmError(_message(version, "; ".join(dict.fromkeys(problems))))
