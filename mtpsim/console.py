"""The commands' consoles, made for the stream and terminal width of the moment.

A module-level `rich.console.Console()` reads COLUMNS once, when its module is imported, and
keeps the sys.stdout of that moment's settings: a second command in the same process (the test
suite's CliRunner, a notebook) would then print at the first command's width. `StdConsole`
builds the Console afresh whenever the stream or COLUMNS changed and forwards everything to it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


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

            self._console, self._key = Console(stderr=self._stderr), key
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
