"""Shared pieces of the bad-input fuzzer: hostile values, mutations of valid inputs, a TOML
writer that can say NaN and inf, the exit-code contract, and the per-run seed and case count."""

from __future__ import annotations

import copy
import json
import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from mtpsim.spec.experiment import SECTIONS, TOP_LEVEL

# One seed per run (printed with the case counts, and on failure); MTPSIM_FUZZ_SEED replays one.
SEED = int(os.environ.get("MTPSIM_FUZZ_SEED") or random.SystemRandom().randrange(2**32))


# Every fuzz run of this session: (name, cases, broken); conftest prints them at the end, so a
# CI log always says how much was fuzzed, how much broke and with which seed.
RUNS: list[tuple[str, int, int]] = []


def record(name: str, cases: int, broken: int) -> None:
    RUNS.append((name, cases, broken))


def fuzz_settings(max_examples: int) -> settings:
    """Bounded runs: no example database (nothing written to the repository), no deadline (a
    loaded CI machine is slow, not wrong; pytest-timeout catches a real hang)."""
    scale = float(os.environ.get("MTPSIM_FUZZ_SCALE") or 1)  # longer hunts: MTPSIM_FUZZ_SCALE=10
    return settings(max_examples=max(1, round(max_examples * scale)), deadline=None,
                    database=None, derandomize=False, suppress_health_check=list(HealthCheck),
                    print_blob=True)


@dataclass(frozen=True)
class Deep:
    """A list nested `depth` deep, rendered as text (a nested Python list would overflow the
    recursion of the writers here before reaching the reader under test)."""

    depth: int

    def text(self) -> str:
        return "[" * self.depth + "]" * self.depth


ODD_FLOATS = [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 1e-300, 0.0, -0.0, -1.0,
              1e12 * 10, 2.0**63]
ODD_INTS = [0, 1, -1, 2**31, 2**63, 2**64 + 1, 10**12 + 1, 10**30, -(10**30)]
ODD_TEXT = ["", "inf", "nan", "../../escaped", "a\nb", "fresh", "share", "[", "1e999", "\x00",
            "é", "0x10", "true"]


def text(max_size: int, min_size: int = 0) -> st.SearchStrategy:
    """Any text a file can hold (lone surrogates cannot be written as UTF-8)."""
    return st.text(st.characters(exclude_categories=["Cs"]), min_size=min_size, max_size=max_size)


SCALARS = st.one_of(st.booleans(), st.integers(-(2**70), 2**70), st.sampled_from(ODD_INTS),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(ODD_FLOATS),
                    text(12), st.sampled_from(ODD_TEXT))
_TREES = st.recursive(SCALARS, lambda ch: st.lists(ch, max_size=4)
                      | st.dictionaries(text(6), ch, max_size=3), max_leaves=8)
VALUES = st.one_of(_TREES, _TREES, _TREES, st.integers(20, 3000).map(Deep))
JSON_VALUES = st.one_of(st.none(), VALUES)

SPEC_KEYS = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in fields(cls)] + list(TOP_LEVEL)


def toml_value(v: Any) -> str:
    if isinstance(v, Deep):
        return v.text()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_string(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def toml_string(v: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    body = "".join(c if c >= " " and c not in '"\\\x7f' else f"\\u{ord(c):04x}" for c in v)
    return f'"{body}"'


def to_toml(raw: dict[str, Any]) -> str:
    """Top-level keys first, then one [section] per table; other values stay top-level."""
    tables = {k: v for k, v in raw.items() if isinstance(v, dict)}
    lines = [f"{toml_string(k)} = {toml_value(v)}" for k, v in raw.items() if k not in tables]
    for name, table in tables.items():
        lines.append(f"[{toml_string(name)}]")
        lines += [f"{toml_string(str(k))} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def json_text(v: Any) -> str:
    """JSON that may hold NaN/Infinity and deep nesting (as a hostile writer would)."""
    marks: list[str] = []

    def swap(x: Any) -> Any:
        if isinstance(x, Deep):
            marks.append(x.text())
            return f"@@deep{len(marks) - 1}@@"
        if isinstance(x, list):
            return [swap(y) for y in x]
        if isinstance(x, dict):
            return {k: swap(y) for k, y in x.items()}
        return x

    text = json.dumps(swap(v))
    for i, m in enumerate(marks):
        text = text.replace(f'"@@deep{i}@@"', m)
    return text


def paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (dict keys and list indices), the root excluded."""
    out = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        out.append((*prefix, k))
        out += paths(v, (*prefix, k))
    return out


def mutate(obj: Any, draw: Callable[[Any], Any], values: Any = JSON_VALUES) -> Any:
    """A copy of `obj` with one path replaced by a hostile value, deleted, or one key added."""
    obj = copy.deepcopy(obj)
    ps = paths(obj)
    if not ps:
        return draw(values)
    path = draw(st.sampled_from(ps))
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
    if action == "delete":
        del parent[path[-1]]
    elif action == "add" and isinstance(parent, dict):
        parent[draw(text(8))] = draw(values)
    else:
        parent[path[-1]] = draw(values)
    return obj


def mutate_number(obj: Any, draw: Callable[[Any], Any]) -> Any:
    """A copy of `obj` with one number replaced by a nearby one (0, 1, doubled, ...): the
    mutants a buggy writer makes, which often stay valid and so reach the fitters."""
    obj = copy.deepcopy(obj)
    numeric = [p for p in paths(obj) if _is_number(_at(obj, p))]
    if not numeric:
        return obj
    path = draw(st.sampled_from(numeric))
    parent = _at(obj, path[:-1])
    parent[path[-1]] = draw(plausible(parent[path[-1]]))
    return obj


def _at(obj: Any, path: tuple) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def corrupt_text(s: str, draw: Callable[[Any], Any]) -> str:
    """Character-level damage: a slice deleted, replaced or duplicated."""
    if not s:
        return draw(text(20))
    i = draw(st.integers(0, len(s) - 1))
    j = draw(st.integers(i, min(len(s), i + 20)))
    how = draw(st.sampled_from(["delete", "replace", "duplicate"]))
    if how == "delete":
        return s[:i] + s[j:]
    if how == "replace":
        return s[:i] + draw(text(10)) + s[j:]
    return s[:j] + s[i:j] + s[j:]


def _no_constant(name: str) -> Any:
    raise AssertionError(f"non-finite {name} in the output of a successful command")


def assert_contract(result: Any, what: str) -> Any:
    """Exit 0 with finite JSON on stdout, or exit 2 with one `error:` line on stderr; never
    another exit code, a traceback or NaN. Returns the parsed output of a success."""
    out, err = result.stdout, result.stderr
    assert result.exit_code in (0, 2), (
        f"{what}: exit {result.exit_code} ({result.exception!r})\n{out[-2000:]}\n{err[-2000:]}")
    assert "Traceback" not in out + err, f"{what}: traceback\n{err[-3000:]}"
    if result.exit_code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, f"{what}: not one line: {err!r}"
        return None
    return json.loads(out, parse_constant=_no_constant)


CHOICES = ["bf16", "fp8", "nvfp4", "none", "piecewise", "full", "full_decode_only", "fixed",
           "uniform", "lognormal", "vllm", "reference", "marginal", "conditional", "sampled",
           "expected", "fresh", "share", "share_recent", "target_share", "random", "openai",
           "auto", "cpu", "wall", "h200", "b200", "glm-5.2", "deepseek-v3.2", "mtp"]


def plausible(current: Any) -> st.SearchStrategy:
    """Values near a valid `current` one (same type, nearby size, a known choice): mutants
    that often stay valid, so the simulator, not only validation, meets odd input."""
    if isinstance(current, bool):
        return st.sampled_from([not current, current])
    if isinstance(current, int):
        return st.sampled_from([0, 1, 2, 3, current + 1, max(current - 1, 0), current * 2,
                                current // 2, current * 10, 64, 65])
    if isinstance(current, float):
        return st.sampled_from([0.0, 1.0, 0.999, 1e-12, 1e12, current * 0.5, current * 2,
                                current * 10, current / 10]) | st.floats(0, 10)
    if isinstance(current, str):
        return st.sampled_from([*CHOICES, current, "inf"])
    if isinstance(current, list | tuple):
        elem = current[0] if current else 0.5
        return st.lists(plausible(elem), max_size=6)
    if isinstance(current, dict):
        return st.dictionaries(st.sampled_from([*CHOICES, "output_throughput"]),
                               st.floats(0, 2000) | st.lists(st.floats(0, 1), max_size=4),
                               max_size=3)
    return VALUES
