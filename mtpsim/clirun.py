"""Running one command: the command table, and how a command ends (one red line and exit code 2
on a user error, 130 on Ctrl-C), shared by the Typer command line (`mtpsim.cliapp`) and the
declared-parameter path of `mtpsim.cli.main`."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from mtpsim.console import StdConsole
from mtpsim.errors import JobError, UserError, one_line

err_console = StdConsole(stderr=True)

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


def print_error(text: str) -> None:
    """The one red line every user error ends with (control characters escaped)."""
    from rich.markup import escape

    err_console.print(f"[bold red]error:[/bold red] {escape(one_line(text))}", highlight=False,
                      soft_wrap=True, emoji=False)  # a file named x:smile:y.toml stays so


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
            raise SystemExit(2) from None
        except JobError as e:  # a bug in a job, already one line: the worker's traceback is gone
            print_error(str(e))
            raise SystemExit(1) from None
        except KeyboardInterrupt:  # run-real and sweep say more; they exit before reaching here
            if not interrupt_line:
                raise
            import shlex

            err_console.print(
                "interrupted: files already written are kept whole (each is written complete or "
                f"not at all), nothing else; rerun: {shlex.join(['mtpsim', *sys.argv[1:]])}",
                highlight=False, markup=False, soft_wrap=True)
            raise SystemExit(130) from None

    return wrapper


def run_parsed(name: str, fn: Callable[..., Any], values: dict[str, Any]) -> NoReturn:
    """Run a command from the values `cliopts.parse` read, ending the process as the Typer
    command line would: exit 0 (or the int returned), 2 on a user error, 130 on Ctrl-C, 1 on a
    closed pipe or end of input."""
    import errno

    try:
        code = exits_on_user_error(fn, interrupt_line=name != "serve-reference")(**values)
    except KeyboardInterrupt:
        sys.exit(130)
    except EOFError:
        print(file=sys.stderr)
        print_error("aborted")
        sys.exit(1)
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        sys.stdout = _Pacified(sys.stdout)  # type: ignore[assignment]
        sys.stderr = _Pacified(sys.stderr)  # type: ignore[assignment]
        sys.exit(1)
    except Exception as e:  # typer.Exit and click's errors, raised by a command that uses them
        if type(e).__module__ not in ("typer._click.exceptions", "click.exceptions"):
            raise
        if type(e).__name__ == "Exit":
            sys.exit(e.exit_code)  # type: ignore[attr-defined]
        print_error("aborted" if type(e).__name__ == "Abort" else e.format_message())  # type: ignore[attr-defined]
        sys.exit(getattr(e, "exit_code", 1))
    sys.exit(code if isinstance(code, int) else 0)


class _Pacified:
    """A stream whose flush ignores a closed pipe (click's PacifyFlushWrapper)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError:
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def command_function(name: str) -> Callable[..., Any]:
    """The function behind command `name` (its module imported)."""
    module, func = dict(COMMANDS)[name].split(":")
    return getattr(importlib.import_module(module), func)
