"""No function in mtpsim (a command included) is longer than 90 lines, counted from its `def` (or
first decorator's line) to its last line, signature and docstring included: a longer one is split
into named steps (issue 22). The largest function and the largest command are printed with -s."""

from __future__ import annotations

import ast
from pathlib import Path

from mtpsim.clirun import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 90


def _sizes() -> list[tuple[int, str]]:
    """(lines, "path:line name") for every function and method in mtpsim."""
    out = []
    for path in sorted((ROOT / "mtpsim").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out.append((node.end_lineno - first + 1,
                            f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"))
    return out


def test_every_function_fits_the_limit() -> None:
    sizes = _sizes()
    assert len(sizes) > 500  # the walk found mtpsim's functions
    too_long = sorted((s for s in sizes if s[0] > LIMIT), reverse=True)
    assert not too_long, f"functions over {LIMIT} lines (split them into named steps): {too_long}"
    print("largest function:", max(sizes))


def test_every_command_fits_the_limit() -> None:
    sizes = {where.rsplit(" ", 1)[0].split(":")[0] + " " + where.rsplit(" ", 1)[1]: n
             for n, where in _sizes()}
    commands = []
    for name, ref in COMMANDS:
        module, func = ref.split(":")
        commands.append((sizes[f"{module.replace('.', '/')}.py {func}"], name))
    assert len(commands) == len(COMMANDS)
    assert max(commands)[0] <= LIMIT, commands
    print("largest command:", max(commands))
