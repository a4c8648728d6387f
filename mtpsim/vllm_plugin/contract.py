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


def _module_file(module: str) -> str:
    """`vllm.a.b` -> `a/b.py`, relative to the vllm package folder."""
    return module.removeprefix("vllm.").replace(".", "/") + ".py"


def check_speculator_source(read: Any, version: str | None = None) -> None:
    """check_speculator_shape's checks on vLLM's source text (`read(relative path) -> text or
    None`), without importing vLLM (which imports torch's compiler): for `mtpsim doctor`."""
    import ast

    version = version or installed_vllm_version()

    def classes(module: str) -> dict[str, ast.ClassDef]:
        text = read(_module_file(module))
        if text is None:
            raise IncompatibleVllmError(_message(version, f"{module} is missing"))
        return {n.name: n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)}

    mtp = classes(MTP_MODULE).get("MTPSpeculator")
    base = classes(BASE_MODULE).get("TargetDependentARSpeculator")
    problems: list[str] = []
    if mtp is None or base is None:
        problems.append("MTPSpeculator or TargetDependentARSpeculator is missing")
    elif not any(isinstance(b, ast.Name) and b.id == base.name for b in mtp.bases):
        problems.append(f"{mtp.name} does not subclass {base.name}")
    else:
        for name in HOOKS:
            for cls in (base, mtp):
                problems += _source_hook_problems(cls, name)
        flag = [n for n in mtp.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                and n.target.id == SHARE_FLAG and isinstance(n.value, ast.Constant)
                and isinstance(n.value.value, bool)]
        if not flag:
            problems.append(f"{mtp.name}.{SHARE_FLAG} (a bool) is missing")
        if not _method(mtp, "load_draft_model"):
            problems.append(f"{mtp.name}.load_draft_model is missing")
    if problems:
        raise IncompatibleVllmError(_message(version, "; ".join(dict.fromkeys(problems))))


def _method(cls: Any, name: str) -> Any:
    import ast

    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _source_hook_problems(cls: Any, name: str) -> list[str]:
    import ast

    fn = _method(cls, name)
    if fn is None:
        return [f"{cls.name}.{name} is missing" if cls.name != "MTPSpeculator"
                else f"{cls.name} does not override {name}"]
    a = fn.args
    shape = f"{cls.name}.{name}({', '.join(x.arg for x in a.args)})"
    if [x.arg for x in a.args] != ["self", "num_reqs"] or a.vararg or a.kwarg or a.kwonlyargs:
        return [f"{shape} should be (self, num_reqs: int) -> None"]
    ann = a.args[1].annotation
    if ann is not None and not (isinstance(ann, ast.Name) and ann.id == "int"):
        return [f"{shape}: num_reqs should be an int"]
    ret = fn.returns
    if ret is not None and not (isinstance(ret, ast.Constant) and ret.value is None):
        return [f"{shape} should return None"]
    return []
