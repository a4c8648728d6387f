"""mtpsim's modules import each other without a loop, counting imports written inside functions
(which only hide a loop until the function runs): a lower layer never reaches back up. Imports
under `if TYPE_CHECKING:` never run and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _runtime_nodes(tree: ast.AST):
    """Every node, leaving out the bodies of `if TYPE_CHECKING:`."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the mtpsim modules it imports anywhere in its body (top level or in functions).
    `from a import b` counts as importing a.b when a.b is a module, else a. A package's
    `__init__` is not an import of its submodules (it runs first, but the edge it adds to a loop
    is the package's own choice to import them, which counts as its own edges)."""
    files = {_module_name(p, root): p for p in (root / "mtpsim").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, is_package, node.level, node.module)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    edges.add(sub if sub in files else base)
        graph[module] = {e for e in edges if e in files and e != module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import loop as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (loop := visit(nxt)):
                return loop
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (loop := visit(start)):
            return loop
    return None


def test_the_walker_sees_a_loop_closed_inside_a_function(tmp_path):
    pkg = tmp_path / "mtpsim"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from mtpsim.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..a import x\n    return x\n")
    assert find_cycle(import_graph(tmp_path)) in (["mtpsim.a", "mtpsim.sub.b", "mtpsim.a"],
                                 ["mtpsim.sub.b", "mtpsim.a", "mtpsim.sub.b"])
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from mtpsim.a import x\n")
    assert find_cycle(import_graph(tmp_path)) is None


def test_mtpsim_has_no_import_loop():
    graph = import_graph()
    assert len(graph) > 50  # it read the package
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))
