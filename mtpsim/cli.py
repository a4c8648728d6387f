"""The `mtpsim` command line. Each command lives in `mtpsim/commands/<name>.py` and is a thin
Typer function over one library call; heavy imports (torch, vllm, matplotlib) happen inside it.

Precedence everywhere: command-line flag > experiment TOML (`--set` overrides included) >
model/GPU preset > built-in default.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from mtpsim import __version__
from mtpsim.clihelp import TeachingCommand
from mtpsim.console import StdConsole
from mtpsim.errors import JobError, UserError, one_line

try:  # typer >= 0.2x vendors its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on the real click
    from click import exceptions as click_errors

err_console = StdConsole(stderr=True)


def print_error(text: str) -> None:
    """The one red line every user error ends with (control characters escaped)."""
    err_console.print(f"[bold red]error:[/bold red] {escape(one_line(text))}", highlight=False,
                      soft_wrap=True, emoji=False)  # a file named x:smile:y.toml stays so


class OneLineUsageErrors(TyperGroup):
    """Typer prints its own usage errors (a missing argument, an unknown option, a bad flag
    value) as a boxed block; mtpsim's contract is one line and exit code 2 for every bad input."""

    def get_params(self, ctx: Any) -> list[Any]:
        from mtpsim.clihelp import untyped

        return untyped(super().get_params(ctx))  # `--version` takes no value: no `<bool>`

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except getattr(click_errors, "NoArgsIsHelpError", ()) as e:  # `mtpsim` alone: the help
            typer.echo(e.ctx.get_help() if e.ctx else e.format_message())
            sys.exit(e.exit_code)
        except click_errors.UsageError as e:
            where = f"{e.ctx.command_path}: " if e.ctx else ""
            hint = f" (see {e.ctx.command_path} --help)" if e.ctx else ""
            print_error(f"{where}{e.format_message()}{hint}")
            sys.exit(e.exit_code)
        except click_errors.ClickException as e:
            print_error(e.format_message())
            sys.exit(e.exit_code)
        except typer.Abort:
            print_error("aborted")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


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
    ("probe", "mtpsim.commands.probe:probe"),
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
            print_error(e.message())
            raise typer.Exit(2) from None
        except JobError as e:  # a bug in a job, already one line: the worker's traceback is gone
            print_error(str(e))
            raise typer.Exit(1) from None
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


def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """mtpsim: simulate, run and compare MTP top-k index sharing for DSA models."""


def build_app(names: Iterable[str] | None = None) -> typer.Typer:
    """The command line with every command, or with only `names`. Typer builds a pydantic
    adapter for every option of every command it holds when it runs, so a process that runs one
    command builds only that one (`main`)."""
    app = typer.Typer(
        name="mtpsim",
        cls=OneLineUsageErrors,
        help="What does reusing sparse-attention top-k indices across MTP draft steps cost in "
        "acceptance, and what does it buy in speed? Simulate it, run it for real, compare.",
        no_args_is_help=True,
        rich_markup_mode="rich",
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    app.callback()(_main)
    wanted = None if names is None else set(names)
    for name, target in COMMANDS:
        if wanted is not None and name not in wanted:
            continue
        module, func = target.split(":")
        fn = exits_on_user_error(getattr(importlib.import_module(module), func),
                                 interrupt_line=name != "serve-reference")
        app.command(name, cls=TeachingCommand)(fn)
    return app


def main() -> None:
    """The `mtpsim` script: `mtpsim COMMAND ...` builds only COMMAND; anything else (`--help`,
    `--version`, a misspelt command) the whole command line, which answers it."""
    args = sys.argv[1:]
    build_app([args[0]] if args and args[0] in dict(COMMANDS) else None)()


def __getattr__(name: str) -> Any:
    """`app`: the whole command line (tests drive it with CliRunner), built on first use."""
    if name == "app":
        globals()["app"] = build_app()
        return globals()["app"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
