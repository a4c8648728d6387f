"""One executor (mtpsim/runs/executor.py, its Ray backend in executor_ray.py) runs every batch of
jobs: sweep points simulated or real, on local workers or Ray, `--uncertainty` draws and advise
cells. No other module starts worker processes or submits Ray tasks; the one exception is the
cluster check's probe, one task pinned to each node before any work (not a batch of jobs)."""

from __future__ import annotations

import ast
from pathlib import Path

import mtpsim

PKG = Path(mtpsim.__file__).parent
POOLS = {"multiprocessing", "concurrent.futures", "concurrent"}
ALLOWED = {
    "runs/executor.py": {"multiprocessing"},
    "runs/executor_ray.py": {"ray.remote", "ray.wait"},
    "cluster/connect.py": {"ray.remote", "ray.wait"},  # require_engine's per-node import probe
}


def _starts_jobs(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in POOLS}
        elif isinstance(node, ast.ImportFrom) and node.module in POOLS:
            found.add(node.module)
        elif (isinstance(node, ast.Attribute) and node.attr in ("remote", "wait")
              and isinstance(node.value, ast.Name) and node.value.id == "ray"):
            found.add(f"ray.{node.attr}")
    return found


def test_only_the_executor_starts_workers_or_submits_ray_tasks():
    seen = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if found := _starts_jobs(ast.parse(path.read_text(encoding="utf-8"))):
            seen[rel] = found
    assert seen == ALLOWED


def test_the_scan_sees_a_second_executor():
    src = ("import multiprocessing\nimport ray\ndef run(items):\n    task = ray.remote(f)\n"
           "    return ray.wait([task.remote(i) for i in items])\n")
    assert _starts_jobs(ast.parse(src)) == {"multiprocessing", "ray.remote", "ray.wait"}
    assert _starts_jobs(ast.parse("from concurrent.futures import ProcessPoolExecutor\n")) == {
        "concurrent.futures"}
