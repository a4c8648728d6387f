"""A command prints at the width of its own invocation: consoles made at import time kept the
COLUMNS of the command that imported their module first (in the suite, the order of the tests
then decided a report's width)."""

from __future__ import annotations

import ast
from pathlib import Path

from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.console import StdConsole

ROOT = Path(__file__).resolve().parents[1]
PR = str(ROOT / "experiments" / "pr47352.toml")


def widest(args: list[str], columns: int) -> int:
    res = CliRunner().invoke(app, args, env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    # a command to run is printed whole on its own line, whatever the width
    return max(len(line) for line in res.output.splitlines()
               if not line.strip().startswith(("mtpsim ", "python ")))


def test_a_wide_command_first_does_not_widen_the_next_one():
    args = ["simulate", PR, "--set", "workload.num_prompts=24", "--uncertainty", "2", "-j", "1"]
    assert widest(args, 200) > 80  # the wide run really used its width
    assert widest(args, 80) <= 80


def test_the_console_is_rebuilt_when_columns_change(monkeypatch):
    c = StdConsole()
    monkeypatch.setenv("COLUMNS", "123")
    assert c.width == 123
    monkeypatch.setenv("COLUMNS", "77")
    assert c.width == 77


def test_no_module_makes_a_rich_console_at_import_time():
    made = []
    for path in sorted((ROOT / "mtpsim").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:  # module level only
            value = getattr(node, "value", None)
            if (isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(value, ast.Call)
                    and getattr(value.func, "id", getattr(value.func, "attr", "")) == "Console"):
                made.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not made, f"module-level Console() (use mtpsim.console.StdConsole): {made}"
