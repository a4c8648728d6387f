"""The Typer command line: every `--help`, every command without a declared parameter list,
and every command line that `mtpsim.cliopts.parse` leaves to Typer (errors included)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from typing import Any

import typer
from typer.core import TyperGroup

from mtpsim import __version__
from mtpsim.clihelp import TeachingCommand
from mtpsim.cliopts import params_of, typer_command
from mtpsim.clirun import COMMANDS, exits_on_user_error, print_error

try:  # typer >= 0.2x vendors its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on the real click
    from click import exceptions as click_errors


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
        except getattr(click_errors, "NoArgsIsHelpError", ()) as e:  # `mtpsim` alone: the help,
            # which Typer's rich help has printed already when it raised (printed twice before)
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
    command builds only that one (`mtpsim.cli.main`)."""
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
        params = params_of(fn)
        app.command(name, cls=TeachingCommand)(fn if params is None else typer_command(fn, params))
    return app
