"""The `mtpsim` command line. Each command lives in `mtpsim/commands/<name>.py` and is a thin
function over one library call; heavy imports (torch, vllm, matplotlib) happen inside it.

A command whose parameters are declared (`mtpsim.cliopts`) runs an everyday command line without
Typer; everything else, `--help` and every error included, goes to the Typer command line
(`mtpsim.cliapp`), built with only the command asked for.

Precedence everywhere: command-line flag > experiment TOML (`--set` overrides included) >
model/GPU preset > built-in default.
"""

from __future__ import annotations

import gc
import sys
from typing import Any

from mtpsim import blas_threads
from mtpsim.clirun import COMMANDS, command_function, exits_on_user_error, print_error, run_parsed
from mtpsim.console import degrade_unencodable, ignore_unusable_columns

__all__ = ["COMMANDS", "exits_on_user_error", "main", "print_error"]

GC_THRESHOLD = 100_000  # the collector's first threshold in an mtpsim process (Python's: 700)


def main() -> None:
    """The `mtpsim` script: `mtpsim COMMAND ...` with plainly valid flags runs COMMAND straight
    from its declared parameters; otherwise Typer builds only COMMAND, or (`--help`, `--version`,
    a misspelt command) the whole command line, which answers it."""
    # Start-up makes a few hundred thousand objects that all live (modules, classes, functions):
    # at the default first threshold (700 allocations) the collector passes over them ~50 times
    # in a short simulate, in vain (~1.4 % of its instructions). At 10,000 it still ran a few
    # times (~1 % more: 970.7 M -> 960.2 M instructions, docs/speed.md round 11); at 100,000 a
    # printed simulate makes no collection at all. Cyclic garbage still goes, in batches of at
    # most that many objects (some MB).
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    # numpy's OpenBLAS starts a thread per core at import, which costs ~0.07 CPU s of a short
    # simulate on 2 cores; mtpsim's arrays are elementwise and its fits small, and its process
    # pools run one worker per core: one BLAS thread each. Set before numpy is imported (the
    # command line imports it only inside a command); a caller's own setting wins, and the
    # engines run-real starts get the caller's environment (mtpsim.blas_threads).
    blas_threads.limit()
    # Windows gives redirected output cp1252, which has no − or Δ: print stand-ins, not a traceback
    for stream in (sys.stdout, sys.stderr):
        degrade_unencodable(stream)
    ignore_unusable_columns()  # COLUMNS=0 (some CI runners): rich would print every line empty
    try:
        _run(sys.argv[1:])
    finally:
        # The process ends here. Frozen, the objects it made are left out of the interpreter's
        # last garbage collections at exit (~0.03 CPU s of a short simulate); atexit handlers,
        # stream flushes and the finalizers of objects freed at exit all still run (only cyclic
        # garbage is not collected, whose finalizers Python does not promise at exit anyway).
        gc.freeze()


def empty_flag(args: list[str]) -> str | None:
    """The first flag given an empty value (`--out ''`, `--out=`), or None. No mtpsim flag means
    anything by '': a path would become the current folder (an unset shell variable in a script
    would write results into it, or resume from what is there)."""
    for i, word in enumerate(args):
        if word == "--":
            return None
        if word.startswith("--") and "=" in word and not word.partition("=")[2].strip():
            return word.partition("=")[0]
        if word.startswith("-") and len(word) > 1 and "=" not in word and i + 1 < len(args) \
                and not args[i + 1].strip():
            return word
    return None


def _run(args: list[str]) -> None:
    from mtpsim.cliopts import params_of, parse

    if (flag := empty_flag(args)) is not None:
        print_error(f"{flag}: expected a value, got an empty string (an unset shell variable?)")
        raise SystemExit(2)
    name = args[0] if args and args[0] in dict(COMMANDS) else None
    if name is not None:
        fn = command_function(name)
        params = params_of(fn)
        values = None if params is None else parse(params, args[1:])
        if values is not None:
            run_parsed(name, fn, values)
    from mtpsim.cliapp import build_app

    build_app([name] if name else None)()


def __getattr__(name: str) -> Any:
    """`app`: the whole command line (tests drive it with CliRunner), built on first use;
    `build_app` from `mtpsim.cliapp`."""
    if name in ("app", "build_app"):
        from mtpsim import cliapp

        globals()["build_app"] = cliapp.build_app
        if name == "app":
            globals()["app"] = cliapp.build_app()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
