"""`--help` is rendered as rich markup, so a spec table named in brackets ("the spec's
[uncertainty] priors") vanished unless written `\\[uncertainty]`: simulate and sweep printed
"Draw N parameter sets from the spec's priors". Every bracketed name in any command's help
text that is not a style tag must reach the printed help."""

import re

import click
import pytest
import typer.main
from typer.testing import CliRunner

from mtpsim.cli import COMMANDS, app

runner = CliRunner()
STYLES = {"b", "i", "u", "s", "cyan", "bold", "dim", "yellow", "green", "red", "italic", "magenta", "blue"}


def _texts(cmd: click.Command) -> list[str]:
    return [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_bracketed_names_in_help_are_printed(name):
    cmd = typer.main.get_command(app).commands[name]
    names = {m for t in _texts(cmd) for m in re.findall(r"\[([a-z_][a-z_.]*)\]", t)} - STYLES
    res = runner.invoke(app, [name, "--help"], env={"COLUMNS": "400", "TERM": "dumb"})
    assert res.exit_code == 0, res.output
    for n in sorted(names):
        assert f"[{n}]" in res.output, (name, n)
