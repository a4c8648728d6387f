"""The thin-command layering (docs/architecture.md, Runs): the simulate, advise, sweep, run-real,
compare and serve-reference commands parse, call a run in mtpsim/runs/ and hand its result to
mtpsim/report/ (or the server). A command that starts choosing executors, catching Ctrl-C, timing
or writing result files again, a command function over 100 lines, or a run that imports a
command, fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import mtpsim

PKG = Path(mtpsim.__file__).parent
THIN = ("simulate", "advise", "sweep", "run_real", "compare", "serve_reference")
# What orchestration needs and a command that only parses and hands over does not.
ORCHESTRATION_MODULES = {"signal", "time", "contextlib", "ray", "rich.progress", "mtpsim.cluster.connect",
                         "mtpsim.cluster.check", "mtpsim.real.run", "mtpsim.compare", "mtpsim.result"}
ORCHESTRATION_CALLS = {"atomic_write_json", "perf_counter", "run_points", "run_jobs", "run_policies",
                       # compare's: loading, pairing, bootstrap, workload check, sweep pooling
                       "load_result", "fidelity", "ab_compare", "workload_mismatch", "load_sweep",
                       "pooled", "repeat_spread"}


def _imports(tree: ast.AST) -> set[str]:
    """Modules imported at run time (type-only imports under `if TYPE_CHECKING:` left out)."""
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                   for stmt in node.body for n in ast.walk(stmt)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def _calls(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return names


def _handles_ctrl_c(tree: ast.AST) -> bool:
    return any(isinstance(h, ast.ExceptHandler) and isinstance(h.type, ast.Name)
               and h.type.id == "KeyboardInterrupt" for h in ast.walk(tree))


def test_thin_commands_do_no_orchestration_of_their_own():
    for name in THIN:
        tree = ast.parse((PKG / "commands" / f"{name}.py").read_text())
        imported = _imports(tree) & ORCHESTRATION_MODULES
        called = _calls(tree) & ORCHESTRATION_CALLS
        assert not imported and not called, f"commands/{name}.py: {sorted(imported | called)}"
        assert not _handles_ctrl_c(tree), f"commands/{name}.py catches KeyboardInterrupt itself"


def test_runs_never_import_a_command():
    for path in sorted((PKG / "runs").glob("*.py")):
        bad = {m for m in _imports(ast.parse(path.read_text())) if m.startswith("mtpsim.commands")}
        assert not bad, f"runs/{path.name} imports {sorted(bad)}"


def test_the_checks_see_what_they_look_for():
    """The walkers find an orchestrating command (what sweep.py was before the move)."""
    src = ("import time\nfrom mtpsim.fileio import atomic_write_json\ndef f(gen):\n"
           "    try:\n        t0 = time.perf_counter()\n    except KeyboardInterrupt:\n        pass\n"
           "    atomic_write_json(1, 2)\n")
    tree = ast.parse(src)
    assert "time" in _imports(tree) & ORCHESTRATION_MODULES
    assert {"perf_counter", "atomic_write_json"} <= _calls(tree)
    assert _handles_ctrl_c(tree)


def test_compare_command_holds_no_loop_and_no_table():
    """compare's pairing and A/B loops live in runs/compare.py, its tables in report/compare.py:
    the command keeps no loop but the one over the plot paths it prints, and builds no JSON."""
    tree = ast.parse((PKG / "commands" / "compare.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "compare")
    loops = [n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.comprehension))]
    assert len(loops) <= 1, f"commands/compare.py loops {len(loops)} times"
    assert not [n for n in ast.walk(fn) if isinstance(n, ast.Dict)], "commands/compare.py builds a dict"
    assert not {"print_table", "ab_table", "fidelity_table"} & _calls(tree)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == ["compare"]


def test_no_command_function_passes_100_lines():
    """A command is its flags, its help and a hand-over (ast: decorators to the last line)."""
    sizes = {}
    for path in sorted((PKG / "commands").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                sizes[f"{path.stem}.{node.name}"] = node.end_lineno - start + 1
    assert "serve_reference.serve_reference" in sizes and len(sizes) >= 10
    assert max(sizes.values()) <= 100, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
