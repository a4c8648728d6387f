"""The `mtpsim` command line. Each command lives in `mtpsim/commands/<name>.py` and is a thin
Typer function over one library call; heavy imports (torch, vllm, matplotlib) happen inside it.

Precedence everywhere: command-line flag > experiment TOML (`--set` overrides included) >
model/GPU preset > built-in default.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from mtpsim import __version__
from mtpsim.clihelp import TeachingCommand
from mtpsim.errors import UserError

err_console = Console(stderr=True)

app = typer.Typer(
    name="mtpsim",
    help="What does reusing sparse-attention top-k indices across MTP draft steps cost in "
    "acceptance, and what does it buy in speed? Simulate it, run it for real, compare.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
)

# (command name, "module:function"). One line per command; the module owns its help text.
COMMANDS: list[tuple[str, str]] = [
    ("simulate", "mtpsim.commands.simulate:simulate"),
    ("calibrate", "mtpsim.commands.calibrate:calibrate"),
    ("compare", "mtpsim.commands.compare:compare"),
    ("sweep", "mtpsim.commands.sweep:sweep"),
    ("run-real", "mtpsim.commands.run_real:run_real"),
    ("serve-reference", "mtpsim.commands.serve_reference:serve_reference"),
    ("advise", "mtpsim.commands.advise:advise"),
    ("doctor", "mtpsim.commands.doctor:doctor"),
]


def exits_on_user_error(fn: Callable[..., Any], interrupt_line: bool = True) -> Callable[..., Any]:
    """Bad input ends the command with one red line and exit code 2, never a traceback; Ctrl-C
    with one line saying what is kept and how to rerun (`interrupt_line`: not for servers, whose
    normal stop is Ctrl-C)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as e:
            err_console.print(f"[bold red]error:[/bold red] {escape(e.message())}", highlight=False,
                              soft_wrap=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:  # run-real and sweep say more; they exit before reaching here
            if not interrupt_line:
                raise
            import shlex
            import sys

            err_console.print(
                "interrupted: files already written are kept whole (each is written complete or "
                f"not at all), nothing else; rerun: {shlex.join(['mtpsim', *sys.argv[1:]])}",
                highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(130) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mtpsim {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """mtpsim: simulate, run and compare MTP top-k index sharing for DSA models."""


for _name, _target in COMMANDS:
    _module, _func = _target.split(":")
    _fn = exits_on_user_error(getattr(importlib.import_module(_module), _func),
                              interrupt_line=_name != "serve-reference")
    app.command(_name, cls=TeachingCommand)(_fn)
