"""User-facing errors: one line naming the file, the field and what was expected; exit code 2."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Bad input from the user (spec, trace, result file, flag). The CLI prints it and exits 2."""

    # A run that may succeed when tried again (a server that could not start): the executor
    # reruns and records it as a job failure; bad input is never rerun.
    transient = False

    def __init__(self, source: str | Path | None, field: str | None, expected: str) -> None:
        self.source = str(source) if source is not None else None
        self.field = field
        self.expected = expected
        super().__init__(self.message())

    def __reduce__(self) -> tuple[type, tuple[str | None, str | None, str]]:
        # Exceptions unpickle as cls(*args), and args holds only the message: rebuild from the
        # parts, or one raised in a worker process (mtpsim sweep) breaks the pool that gets it.
        return type(self), (self.source, self.field, self.expected)

    def message(self) -> str:
        """One line: control characters in any part (a file name with a newline) are escaped."""
        where = ": ".join(p for p in (self.source, self.field) if p)
        return one_line(f"{where}: {self.expected}" if where else self.expected)


def one_line(text: str) -> str:
    """`text` with newlines and other control characters written as escapes (`\\n`)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class SpecError(UserError):
    """An experiment spec field is missing, unknown, of the wrong type or impossible."""


class TraceError(UserError):
    """A trace file is not a readable mtpsim trace."""


class ResultError(UserError):
    """A result file is neither an mtpsim result nor a `vllm bench serve --save-result` JSON."""


class JobError(Exception):
    """A job of a batch (a sweep point, a draw) failed with an exception that is not bad input:
    one line naming the job and the exception. The CLI prints it and exits 1."""
