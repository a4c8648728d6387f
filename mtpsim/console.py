"""The commands' consoles, made for the stream and terminal width of the moment.

A module-level `rich.console.Console()` reads COLUMNS once, when its module is imported, and
keeps the sys.stdout of that moment's settings: a second command in the same process (the test
suite's CliRunner, a notebook) would then print at the first command's width. `StdConsole`
builds the Console afresh whenever the stream or COLUMNS changed and forwards everything to it.

`degrade_unencodable` lets a stream that cannot encode mtpsim's characters (Windows' cp1252 for
redirected output: no − or Δ) print ASCII stand-ins instead of raising UnicodeEncodeError.
"""

from __future__ import annotations

import codecs
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


# ASCII stand-ins, one character each where the character can sit in a table cell (rich measures
# the cell before the stream encodes it); what is not listed is written as "?"
ASCII_STAND_INS = {
    "\u2212": "-", "\u2013": "-", "\u2014": "-", "\u0394": "d", "\u00b5": "u", "\u03bc": "u",
    "\u00b7": ".", "\u2022": "*", "\u00d7": "x", "\u00b1": "+-", "\u2264": "<=", "\u2265": ">=",
    "\u2248": "~", "\u2026": "...", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
    "\u00b2": "2", "\u00b9": "1", "\u00b3": "3", "\u00a7": "S",
    **dict.fromkeys("\u2500\u2501", "-"), **dict.fromkeys("\u2502\u2503", "|"),
    **dict.fromkeys("\u250c\u250f\u2510\u2513\u2514\u2517\u2518\u251b\u252c\u2533\u2534"
                    "\u253b\u251c\u2521\u2524\u2529\u253c\u2547", "+"),
    **dict.fromkeys("\u2588\u2589\u258a\u258b\u258c\u258d\u258e\u258f", "#"),
}
ERRORS = "mtpsim-ascii"


def _ascii_stand_in(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    return "".join(ASCII_STAND_INS.get(ch, "?") for ch in text), exc.end


codecs.register_error(ERRORS, _ascii_stand_in)


def ignore_unusable_columns() -> None:
    """Unset a COLUMNS that names no width (0, negative, not a whole number), for the consoles
    this process does not make itself (Typer's help and usage errors): at COLUMNS=0 rich prints
    every line 0 columns wide, i.e. nothing."""
    from mtpsim.plainprint import usable_columns

    if "COLUMNS" in os.environ and usable_columns() is None:
        del os.environ["COLUMNS"]


def degrade_unencodable(stream: Any) -> None:
    """Make `stream` write ASCII stand-ins (else "?") for the characters its encoding lacks,
    where it would raise: a text stream that is not UTF-8 and has the default strict errors."""
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
    if encoding.startswith("utf") or getattr(stream, "errors", None) != "strict":
        return
    try:
        stream.reconfigure(errors=ERRORS)
    except (AttributeError, ValueError, OSError):
        pass


class StdConsole:
    """Stands for `Console()` (or `Console(stderr=True)`) of the current stdout/stderr and width."""

    def __init__(self, stderr: bool = False) -> None:
        self._stderr = stderr
        self._key: tuple[int, str | None] | None = None
        self._console: Console | None = None

    def current(self) -> Console:
        stream = sys.stderr if self._stderr else sys.stdout
        key = (id(stream), os.environ.get("COLUMNS"))
        if self._console is None or key != self._key:
            from rich.console import Console  # on first print: rich costs ~0.05 s to import

            from mtpsim.plainprint import usable_columns

            environ = None
            if key[1] is not None and usable_columns() is None:  # COLUMNS=0: as if unset
                environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
            self._console, self._key = Console(stderr=self._stderr, _environ=environ), key
        return self._console

    def _stream(self) -> Any:
        return sys.stderr if self._stderr else sys.stdout

    @property
    def is_terminal(self) -> bool:
        from mtpsim.plainprint import is_terminal

        tty = is_terminal(self._stream())
        return self.current().is_terminal if tty is None else tty

    @property
    def width(self) -> int:
        from mtpsim.plainprint import console_width, styles

        # a file or a terminal: the width rich gives it (a dumb terminal: rich's own)
        width = console_width() if styles(self._stream()) is not None else None
        return self.current().width if width is None else width

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """rich's `Console.print`; a plain string or `plainprint.Table` going to a file is laid
        out without importing rich's console (`mtpsim.plainprint`), as rich would lay it out."""
        if len(objects) == 1 and set(kwargs) <= {"highlight", "markup", "emoji", "soft_wrap"}:
            from mtpsim.plainprint import printed

            text = printed(objects[0], self._stream(), **kwargs)
            if text is not None:
                self._stream().write(text)
                self._stream().flush()
                return
        self.current().print(*objects, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current(), name)

    def __enter__(self) -> Console:  # rich's Live uses `with console:`
        return self.current().__enter__()

    def __exit__(self, *exc: object) -> None:
        self.current().__exit__(*exc)
