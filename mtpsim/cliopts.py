"""A command's parameters declared once, as plain data: Typer builds its command line (help,
validation, error messages) from the declaration, and `parse` reads the everyday command lines
(flags with plain values) without importing Typer, click or pydantic at all.

Importing Typer 0.29 and building its pydantic adapter per option costs ~0.2 CPU-seconds, most of
a short `mtpsim simulate`. `parse` accepts only a strict subset of what Typer accepts (each
value plainly valid, no flag repeated that takes one value) and returns None for anything else,
`--help` included, so Typer answers every other command line itself: its help, its checks, its
one-line errors. A test drives both over the same command lines and compares the values.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

from mtpsim.dataclass import dataclass

_INT = re.compile(r"0|[1-9][0-9]{0,17}")  # what both read alike: no sign, spaces or underscores


@dataclass(frozen=True)
class Param:
    """One parameter of a command: `flags` empty for the positional argument."""

    name: str
    kind: type  # str, int, bool or Path
    help: str
    flags: tuple[str, ...] = ()
    default: Any = None
    multiple: bool = False  # repeatable; the function gets a list, or None when not given
    min: int | None = None

    def annotation(self) -> Any:
        """The Python type Typer reads for this parameter."""
        if self.multiple:
            return list[self.kind] | None  # type: ignore[name-defined]
        return self.kind | None if self.default is None and self.flags else self.kind


def declared(*params: Param) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Attach `params` to the command function; its own parameters must be exactly these, in
    order, with these defaults (checked at import, so the two cannot drift)."""

    def attach(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]
        want = [(p.name, inspect.Parameter.empty if not p.flags else p.default) for p in params]
        if own != want:
            raise TypeError(f"{fn.__name__}: parameters {own} differ from the declaration {want}")
        fn.__cli_params__ = params  # type: ignore[attr-defined]
        return fn

    return attach


def params_of(fn: Callable[..., Any]) -> tuple[Param, ...] | None:
    return getattr(fn, "__cli_params__", None)


def _value(p: Param, text: str) -> Any:
    """`text` as `p`'s value, or None where Typer might read it otherwise (or refuse it)."""
    if not text or text.startswith("-"):
        return None
    if p.kind is int:
        if not _INT.fullmatch(text) or (p.min is not None and int(text) < p.min):
            return None
        return int(text)
    if p.kind is Path:
        return Path(text)
    return text if p.kind is str else None


def parse(params: Sequence[Param], argv: Sequence[str]) -> dict[str, Any] | None:
    """The keyword arguments Typer would pass for `argv` (the words after the command name), or
    None when `argv` is not plainly valid: asking for help, an unknown or repeated flag, a value
    that is missing, empty, starts with '-' or is not a plain number."""
    flags = {f: p for p in params for f in p.flags}
    positional = [p for p in params if not p.flags]
    values: dict[str, Any] = {}
    words: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("-"):
            words.append(word)
            continue
        name, eq, text = word.partition("=") if word.startswith("--") else (word, "", "")
        p = flags.get(name)
        if p is None:
            return None
        if p.kind is bool:
            if eq or p.name in values:
                return None
            values[p.name] = True
            continue
        if not eq:
            if i >= len(argv):
                return None
            text, i = argv[i], i + 1
        value = _value(p, text)
        if value is None:
            return None
        if p.multiple:
            values.setdefault(p.name, []).append(value)
        elif p.name in values:
            return None
        else:
            values[p.name] = value
    if len(words) != len(positional):
        return None
    for p, word in zip(positional, words, strict=True):
        value = _value(p, word)
        if value is None:
            return None
        values[p.name] = value
    return {p.name: values.get(p.name, p.default) for p in params}


def typer_command(fn: Callable[..., Any], params: Sequence[Param]) -> Callable[..., Any]:
    """`fn` as Typer reads a command: the declaration turned into Annotated parameters."""
    import typer

    sig = []
    for p in params:
        extra = {} if p.min is None else {"min": p.min}
        info = typer.Option(*p.flags, help=p.help, **extra) if p.flags else typer.Argument(help=p.help)
        sig.append(inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY,
                                     annotation=Annotated[p.annotation(), info],
                                     default=p.default if p.flags else inspect.Parameter.empty))

    def command(**kwargs: Any) -> Any:
        return fn(**kwargs)

    command.__name__, command.__qualname__, command.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    command.__module__ = fn.__module__
    command.__signature__ = inspect.Signature(sig)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: sig[i].annotation for i, p in enumerate(params)}
    return command

