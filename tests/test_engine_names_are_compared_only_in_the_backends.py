"""Outside mtpsim/real/, no code compares anything with an engine's name (`engine == "vllm"`,
`plan.engine in ("reference", "vllm")`, `e.scheduler == "reference"`, `bench_client == "vllm"`):
what an engine can do is its backend's Capabilities, how its simulated scheduler forms steps is
its `SCHEDULERS` rule, and a benchmark client's load is its `LOADS` entry, so a new engine is one
backend module (and entries in tables), not a branch in every command."""

from __future__ import annotations

import ast
from pathlib import Path

from mtpsim.real import ENGINES

ROOT = Path(__file__).resolve().parents[1]


def _names(node: ast.AST) -> set[str]:
    """String constants in a comparison operand (a literal or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def engine_comparisons(source: str) -> list[int]:
    """Lines comparing anything with an engine name (a literal, or a tuple/list/set of them)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(
                _names(o) & set(ENGINES) for o in [node.left, *node.comparators]):
            lines.append(node.lineno)
    return lines


def test_the_check_sees_the_forms_it_forbids():
    assert engine_comparisons('if run.engine == "vllm": pass') == [1]
    assert engine_comparisons('x = engine not in ("reference", "vllm")') == [1]
    assert engine_comparisons('if e.scheduler == "reference": pass') == [1]
    assert engine_comparisons('ok = engine.get("scheduler") == "reference"') == [1]
    assert engine_comparisons('load = a if run.bench_client == "vllm" else b') == [1]
    assert engine_comparisons('if engine == DEFAULT_ENGINE: pass') == []  # a default, no name
    assert engine_comparisons('v = package_version("vllm")') == []  # a package, not compared


def test_no_engine_name_is_compared_outside_the_backends():
    found = {}
    for path in sorted((ROOT / "mtpsim").rglob("*.py")):
        if "real" in path.relative_to(ROOT / "mtpsim").parts[:1]:
            continue
        if lines := engine_comparisons(path.read_text(encoding="utf-8")):
            found[str(path.relative_to(ROOT))] = lines
    assert not found, found
