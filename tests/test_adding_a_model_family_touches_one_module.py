"""Adding a model family built from existing layer kinds touches one module plus a preset: the
hybrid_linear_dsa family, added through the seam (mtpsim.models.families), is named in mtpsim/
only by its own module and its line in the registry (families/__init__.py), and in one preset.
No module outside families/ branches on a family, and the fields that say which layer is which
(num_dense_layers, num_indexer_layers, full_attention_period) are read only by the families:
the roofline, memory model, fitted features and engine get counts and layer lists from them.
(A new layer *kind* also adds its costs to families/layers.py, its fields to ModelSpec and its
pricing to the roofline; docs/architecture.md.)"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from mtpsim.models.families import FAMILIES

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "mtpsim"
FAMILY_DIR = PKG / "models" / "families"
LAYER_FIELDS = {"num_dense_layers", "num_indexer_layers", "full_attention_period"}


@functools.cache
def _modules() -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p)) for p in PKG.rglob("*.py")}


def _names_family(tree: ast.Module, name: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == name:
            return True
        if isinstance(node, ast.ImportFrom) and node.module == f"mtpsim.models.families.{name}":
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "mtpsim.models.families" and any(
                a.name == name for a in node.names):
            return True
    return False


def test_the_hybrid_family_is_named_by_its_module_and_the_registry_only():
    touched = sorted(f for f, tree in _modules().items()
                     if _names_family(tree, "hybrid_linear_dsa"))
    assert touched == ["mtpsim/models/families/__init__.py",
                       "mtpsim/models/families/hybrid_linear_dsa.py"], touched
    presets = [p.name for p in (PKG / "spec/presets/models").glob("*.toml")
               if 'family = "hybrid_linear_dsa"' in p.read_text()]
    assert presets == ["hybrid-linear-dsa.toml"]
    # the count a reviewer reads: 1 family module + 1 registry line's module + 1 preset
    assert len(touched) + len(presets) == 3


def test_no_module_outside_the_families_compares_a_family():
    names = set(FAMILIES)
    offenders = []
    for f, tree in _modules().items():
        if f.startswith("mtpsim/models/families/"):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            parts = [node.left, *node.comparators]
            if any(isinstance(p, ast.Constant) and p.value in names for p in parts) or any(
                    isinstance(p, ast.Attribute) and p.attr == "family" for p in parts):
                offenders.append(f"{f}:{node.lineno}")
    assert not offenders, offenders


def test_only_the_families_read_which_layer_is_which():
    readers = sorted({f for f, tree in _modules().items() for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and node.attr in LAYER_FIELDS})
    assert readers and all(f.startswith("mtpsim/models/families/") for f in readers), readers


def test_every_registered_family_lives_in_its_own_module():
    for name, family in FAMILIES.items():
        assert type(family).__module__ == f"mtpsim.models.families.{name}"
        assert (FAMILY_DIR / f"{name}.py").is_file()
