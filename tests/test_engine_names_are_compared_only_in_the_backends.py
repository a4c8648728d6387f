"""Outside mtpsim/real/, no code compares an engine's name (`engine == "vllm"`,
`plan.engine in ("reference", "vllm")`): what an engine can do is its backend's Capabilities, so a
new engine is one backend module, not a branch in every command."""

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


def _subject(node: ast.AST) -> str:
    """What an operand names: `run.engine` -> engine, `spec.get("scheduler")` -> scheduler."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value)
    return ast.unparse(node)


def engine_comparisons(source: str) -> list[int]:
    """Lines comparing something named *engine* with an engine name."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        named = [o for o in operands if not _names(o)]
        if any(_names(o) & set(ENGINES) for o in operands) and any(
                "engine" in _subject(o).lower() for o in named):
            lines.append(node.lineno)
    return lines


def test_the_check_sees_the_forms_it_forbids():
    assert engine_comparisons('if run.engine == "vllm": pass') == [1]
    assert engine_comparisons('x = engine not in ("reference", "vllm")') == [1]
    assert engine_comparisons('if e.scheduler == "reference": pass') == []  # not an engine
    assert engine_comparisons('ok = engine.get("scheduler") == "reference"') == []
    assert engine_comparisons('if engine == DEFAULT_ENGINE: pass') == []


def test_no_engine_name_is_compared_outside_the_backends():
    found = {}
    for path in sorted((ROOT / "mtpsim").rglob("*.py")):
        if "real" in path.relative_to(ROOT / "mtpsim").parts[:1]:
            continue
        if lines := engine_comparisons(path.read_text(encoding="utf-8")):
            found[str(path.relative_to(ROOT))] = lines
    assert not found, found
