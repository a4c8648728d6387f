"""Declaring and validating spec fields: a field is one line, `name: type = option(default, help, check)`.

Types understood: int, float, bool, str, `X | None`, `tuple[X, ...]`, `dict[str, X]` (nested).
A check returns None when the value is fine, else what was expected ("an integer >= 1").
"""

from __future__ import annotations

import functools
import math
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, field, fields
from typing import Any

from mtpsim.errors import SpecError

Check = Callable[[Any], str | None]


# What a field means, which decides whether overriding it leaves measured rows valid:
# setup: what a real run measured (model, GPU, engine, drafting, workload);
# model: the simulator's model parameters and fits, and the data they are fitted on;
# prior: the uncertainty priors, noise model and Monte Carlo settings;
# runner: how real mode launches a run (server flags, ports, devices); the simulator ignores it;
# bookkeeping: seed and policies (what runs and how it is drawn, not what was measured);
# label: text and pointers that change nothing computed (descriptions, where rows come from).
ROLES = ("setup", "model", "prior", "runner", "bookkeeping", "label")


def option(default: Any, help: str, check: Check | None = None, role: str | None = None,
           path: bool = False, names: tuple[str, ...] = ()) -> Any:
    """A spec field with a default, its help text, an optional value check and its role (one of
    ROLES; None: the section's `ROLE`). `path`: a file path, read from the experiment file's
    folder when the file holds it, from the current folder when --set does (mtpsim.spec.paths);
    `names`: the values of a path field that are names, not paths (`reference.weights = "small"`)."""
    if role is not None and role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    meta = {"help": help, "check": check, "role": role, "path": path, "names": names}
    if isinstance(default, dict):
        return field(default_factory=lambda: dict(default), metadata=meta)
    return field(default=default, metadata=meta)


def role_of(cls: type, name: str) -> str:
    """The role of field `name` of section `cls`: its own, else the section's `ROLE`."""
    f = next((f for f in fields(cls) if f.name == name), None)
    if f is None:
        raise KeyError(f"{cls.__name__} has no field {name!r}")
    role = f.metadata.get("role") or getattr(cls, "ROLE", None)
    if role not in ROLES:
        raise ValueError(f"{cls.__name__}.{name} declares no role (one of {', '.join(ROLES)})")
    return role


def at_least(lo: float) -> Check:
    return lambda v: None if v is None or v >= lo else f"a number >= {lo:g}"


def greater_than(lo: float) -> Check:
    return lambda v: None if v is None or v > lo else f"a number > {lo:g}"


def in_range(lo: float, hi: float) -> Check:
    return lambda v: None if v is None or lo <= v <= hi else f"a number in [{lo:g}, {hi:g}]"


def unit_interval_open_low(v: Any) -> str | None:
    return None if 0 < v <= 1 else "a number in (0, 1]"


def one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else f"one of {', '.join(map(repr, choices))}"


def each(check: Check) -> Check:
    """Apply `check` to every element of a tuple or every value of a dict."""

    def run(v: Any) -> str | None:
        for x in v.values() if isinstance(v, dict) else v:
            if (msg := check(x)) is not None:
                return f"every entry {msg}"
        return None

    return run


def _type_name(tp: Any, plural: bool = False) -> str:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return " or ".join(_type_name(a, plural) for a in typing.get_args(tp)
                           if a is not type(None))
    if origin is tuple:
        return f"a list of {_type_name(typing.get_args(tp)[0], plural=True)}"
    if origin is dict:
        return f"a table of {_type_name(typing.get_args(tp)[1], plural=True)}"
    names = {int: ("an integer", "integers"), float: ("a number", "numbers"),
             bool: ("true or false", "booleans"), str: ("a string", "strings")}
    return names[tp][plural] if tp in names else str(tp)


def coerce(value: Any, tp: Any) -> Any:
    """`value` as type `tp`, or raise TypeError naming what was expected."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        for arg in typing.get_args(tp):
            if arg is type(None):
                continue
            try:
                return coerce(value, arg)
            except TypeError:
                pass
        raise TypeError(f"expected {_type_name(tp)}, got {value!r}")
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise TypeError(f"expected {_type_name(tp)}, got {value!r}")
        return tuple(coerce(v, typing.get_args(tp)[0]) for v in value)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected {_type_name(tp)}, got {value!r}")
        vt = typing.get_args(tp)[1]
        return {str(k): coerce(v, vt) for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value.strip().lower() in ("inf", "+inf", "infinity"):
            return math.inf  # refused by build_section unless the field's default is inf
    elif tp is str:
        if isinstance(value, str):
            return value
    raise TypeError(f"expected {_type_name(tp)}, got {value!r}")


# Every number of a spec lies in these bounds (beyond them the models overflow to inf/NaN or
# the simulator tries to allocate the impossible); fields have tighter checks of their own.
MAX_INT = 10**12
FLOAT_RANGE = (1e-12, 1e12)


def _magnitude(value: Any, allow_inf: bool) -> str | None:
    """None if every number in `value` is finite (or +inf where `allow_inf`) and of sane size."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else (value,)
    for x in items:
        if isinstance(x, dict | tuple):
            if (msg := _magnitude(x, allow_inf)) is not None:
                return msg
        elif isinstance(x, bool) or not isinstance(x, int | float):
            continue
        elif isinstance(x, int) and abs(x) > MAX_INT:
            return f"expected an integer of magnitude at most {MAX_INT:.0e}, got {x:.3g}"
        elif isinstance(x, float) and (math.isnan(x) or (math.isinf(x) and not (allow_inf and x > 0))):
            return f"expected a finite number, got {x}"
        elif isinstance(x, float) and math.isfinite(x) and x != 0 and not (
                FLOAT_RANGE[0] <= abs(x) <= FLOAT_RANGE[1]):
            return (f"expected 0 or a magnitude in [{FLOAT_RANGE[0]:g}, {FLOAT_RANGE[1]:g}], "
                    f"got {x:g}")
    return None


def field_hint(cls: type, name: str) -> Any:
    """`typing.get_type_hints(cls)[name]`, evaluating only this field's annotation (a spec sets
    about half of its sections' fields; each string annotation costs a compile): the string is
    evaluated as get_type_hints evaluates it, names looked up in the defining class's module,
    then in the class, then among the builtins; a bare None becomes NoneType."""
    for base in cls.__mro__:
        annotations = base.__dict__.get("__annotations__", {})
        if name in annotations:
            hint = annotations[name]
            if isinstance(hint, str):
                hint = eval(_compiled(hint), dict(vars(base)), vars(sys.modules[base.__module__]))
            return type(None) if hint is None else hint
    raise KeyError(name)


@functools.cache
def _compiled(annotation: str) -> types.CodeType:
    """An annotation's expression compiled once per process: pr47352 evaluates 78 annotations,
    9 distinct texts ("int" 33 times)."""
    return compile(annotation, "<annotation>", "eval")


def build_section(cls: type, raw: Mapping[str, Any], section: str,
                  source_of: Callable[[str], str]) -> Any:
    """Validate `raw` against dataclass `cls`; every problem is a SpecError naming the key."""
    names = [f.name for f in fields(cls)]
    for key in raw:
        if key not in names:
            raise SpecError(source_of(key), f"{section}.{key}",
                            f"unknown key; expected one of {', '.join(names)}")
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        where = f"{section}.{f.name}"
        if f.name in raw:
            try:
                value = coerce(raw[f.name], field_hint(cls, f.name))
            except TypeError as e:
                raise SpecError(source_of(f.name), where, str(e)) from None
            kwargs[f.name] = value
        elif f.default is MISSING and f.default_factory is MISSING:
            raise SpecError(source_of(f.name), where, "missing; set it in the experiment or preset")
        else:
            value = f.default if f.default is not MISSING else f.default_factory()
        if (msg := _magnitude(value, allow_inf=f.default == math.inf)) is not None:
            raise SpecError(source_of(f.name), where, msg)
        check = f.metadata.get("check")
        if check is not None and (msg := check(value)) is not None:
            if isinstance(value, dict):  # the message names the entry; the table is long
                raise SpecError(source_of(f.name), where, f"expected {msg}")
            shown = "inf" if value == math.inf else repr(value)
            unset = "" if f.name in raw else f" (not set: the built-in default; set {where})"
            raise SpecError(source_of(f.name), where, f"expected {msg}, got {shown}{unset}")
    return cls(**kwargs)


def describe(cls: type) -> list[tuple[str, str]]:
    """(field name, help) pairs, for documentation."""
    return [(f.name, f.metadata.get("help", "")) for f in fields(cls)]
