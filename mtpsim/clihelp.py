"""How `--help` reads: docstrings are written hard-wrapped at 100 columns, but the terminal
wraps them again, so a kept line break would cut a sentence in two; and an on/off flag takes no
value, so Typer's `<bool>` type column would only mislead."""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperCommand

# A line that starts its own item: "Example: ...", "Precedence: ...", a bullet.
_ITEM = re.compile(r"^\s*([-*•·]\s|[A-Z][A-Za-z ]{0,24}:\s)")


def unwrap(text: str) -> str:
    """Join the hard-wrapped lines of each paragraph; keep blank lines and lines that start an item."""
    paragraphs = []
    for para in text.split("\n\n"):
        lines = [ln.strip() for ln in para.strip("\n").splitlines()]
        out: list[str] = []
        for ln in lines:
            if out and not _ITEM.match(ln):
                out[-1] += " " + ln
            else:
                out.append(ln)
        paragraphs.append("\n".join(out))
    return "\n\n".join(paragraphs)


class TeachingCommand(TyperCommand):
    """A Typer command whose help keeps sentences whole and shows no type for flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            import inspect

            self.help = unwrap(inspect.cleandoc(self.help))

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # --help is added here, after __init__
        return untyped(params)


def untyped(params: list[Any]) -> list[Any]:
    """No type column: a flag takes no value (`<bool>` misleads), and for the others the type
    column (`<list[str]>`) narrows the help column until an example such as
    `speculative.num_speculative_tokens=2` no longer fits 80 columns and is cut with an ellipsis;
    each help text gives an example value instead."""
    for p in params:
        if p.metavar is None and getattr(p, "param_type_name", "") == "option":
            p.metavar = ""  # Typer prints the metavar instead of the type
    return params
