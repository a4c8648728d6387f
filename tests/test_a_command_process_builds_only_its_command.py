"""`mtpsim COMMAND ...` as a process builds only COMMAND's command line (Typer builds a pydantic
adapter per option of every command it holds, and imports each command's module), while
`mtpsim --help`, `--version` and a misspelt command still get the whole command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mtpsim.cli import COMMANDS, build_app

ROOT = Path(__file__).resolve().parents[1]


# runs the `mtpsim` script's entry point, then lists the mtpsim modules it imported
PROBE = """import sys
from mtpsim.cli import main
sys.argv = ["mtpsim", *sys.argv[1:]]
try:
    main()
finally:
    print("MODULES", *sorted(m for m in sys.modules if m.startswith("mtpsim.")))
"""


def _imported(*args: str) -> tuple[subprocess.CompletedProcess, str]:
    r = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    return r, r.stdout.rsplit("MODULES", 1)[1]


def test_build_app_holds_the_commands_asked_for():
    assert len(build_app(["simulate"]).registered_commands) == 1
    assert len(build_app().registered_commands) == len(COMMANDS)


def test_simulate_help_imports_no_other_command():
    r, modules = _imported("simulate", "--help")
    assert r.returncode == 0 and "mtpsim simulate" in r.stdout
    assert "mtpsim.commands.simulate" in modules.split()
    others = [m for name, target in COMMANDS if name != "simulate"
              for m in [target.split(":")[0]] if m in modules.split()]
    assert not others, others


def test_the_whole_command_line_answers_help_and_a_misspelt_command():
    r, _ = _imported("--help")
    assert r.returncode == 0 and all(name in r.stdout for name, _ in COMMANDS)
    r, _ = _imported("simulat")
    assert r.returncode == 2 and "No such command" in r.stderr
