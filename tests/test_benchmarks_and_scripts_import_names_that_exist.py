"""Every `from mtpsim... import NAME` in benchmarks/ and scripts/ (at the top or inside a
function) names a module and a name that exist: a type moved between modules must not leave a
benchmark that fails only when someone runs it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports() -> list[tuple[str, int, str, str]]:
    out = []
    for folder in ("benchmarks", "scripts"):
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                        and node.module.split(".")[0] == "mtpsim":
                    out += [(f"{folder}/{path.name}", node.lineno, node.module, a.name) for a in node.names]
    return out


def test_every_mtpsim_name_they_import_exists():
    found = _imports()
    assert len(found) > 50  # the walk reads the folders
    missing = []
    for where, line, module, name in found:
        mod = importlib.import_module(module)
        if name != "*" and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")  # a submodule
            except ModuleNotFoundError:
                missing.append(f"{where}:{line} from {module} import {name}")
    assert not missing, missing
