"""`--help` on every command: a docstring's hard-wrapped lines are joined (the terminal wraps them
again, so a kept break would cut a sentence in two), items such as "Example:" keep their own line,
and on/off flags show no `<bool>` type."""

import inspect
import re

import pytest
from rich.text import Text
from typer.testing import CliRunner

from mtpsim.cli import COMMANDS, app
from mtpsim.clihelp import unwrap

runner = CliRunner()


def _help(name: str, columns: int) -> str:
    res = runner.invoke(app, [name, "--help"], env={"COLUMNS": str(columns), "TERM": "dumb"})
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_help_prints_each_docstring_line_whole_and_no_bool_type(name):
    out = _help(name, 400)
    assert "<bool>" not in out
    lines = [re.sub(r"\s+", " ", ln).strip(" │") for ln in out.splitlines()]
    cmd = app.registered_commands[[n for n, _ in COMMANDS].index(name)]
    doc = unwrap(inspect.cleandoc(cmd.callback.__doc__))
    for para in doc.split("\n\n")[1:]:
        for want in para.splitlines():
            plain = re.sub(r"\s+", " ", Text.from_markup(want).plain)
            assert any(plain in ln for ln in lines), (name, plain)


def test_unwrap_joins_wrapped_lines_and_keeps_items():
    text = "The table has one column\nper policy.\n\nPrecedence: a > b.\nExample: x\n- one\n  more"
    want = "The table has one column per policy.\n\nPrecedence: a > b.\nExample: x\n- one more"
    assert unwrap(text) == want


def test_flags_keep_working_without_a_type_column():
    out = _help("simulate", 120)
    assert re.search(r"--json\s{4,}Print machine-readable JSON", out)


@pytest.mark.parametrize("name", ["", *[n for n, _ in COMMANDS]])
def test_help_at_80_columns_cuts_nothing_and_types_nothing(name):
    """A type column (`<list[str]>`) or a `--x/--no-x` pair narrows the help column until an
    example such as `speculative.num_speculative_tokens=2` is cut with an ellipsis."""
    res = runner.invoke(app, [name, "--help"] if name else ["--help"],
                        env={"COLUMNS": "80", "TERM": "dumb"})
    assert res.exit_code == 0, res.output
    assert "…" not in res.output and "<bool>" not in res.output
