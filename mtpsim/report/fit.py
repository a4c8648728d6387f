"""Tables that fit the terminal: a table wider than the console is cut into several, each
repeating the row labels and holding whole column groups, so no number is wrapped, truncated or
loses its marker. Only word columns (labels, verdicts) may wrap, and only at spaces."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mtpsim import plainprint

if TYPE_CHECKING:  # rich is imported where a table needs it (a plain one printed to a file does not)
    from rich.console import Console
    from rich.table import Column, Table

_WORDS = 16  # the narrowest a column of words is made before the table is cut
_NUMBER = re.compile(r"^[-+±\[\]()., %*0-9a-zµ/]*[0-9][-+±\[\]()., %*0-9a-zµ/]*$|^-$")
_INTERVAL = re.compile(r"^(.*?) ?\[(.+?), (.+?)\]$")  # "957 [610, 1,370]", "+0.18 % [-1.36, +4.44]"
_ASIDE = re.compile(r"^(.+?) \((.+)\)$")  # "1.23 pts (-40 %)"


def cell_text(cell: object) -> str:
    if isinstance(cell, plainprint.Styled) or isinstance(cell, str) and plainprint.plain(cell):
        return str(cell)  # what rich's markup would make of it
    from rich.text import Text

    return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain


def _atom(text: str) -> bool:
    return bool(_NUMBER.match(text)) and len(text.split()) <= 2 and sum(map(str.isalpha, text)) <= 3


def is_figure(text: str) -> bool:
    """A number with its unit or marker ("1,629.90*", "+0.52 pp", "-"), an interval with or
    without its median ("957 [610, 1,370]", "[-9.90, -1.10]") or a figure with a figure aside
    ("1.23 pts (-40 %)"): one thing to read, never to be split across lines."""
    m = _INTERVAL.match(text)
    if m:
        return all(_atom(p) for p in m.groups() if p)
    m = _ASIDE.match(text)
    if m:
        return _atom(m[1]) and _atom(m[2])
    return _atom(text)


def _numeric(col: Column) -> bool:
    """A column of figures (and "-", or a lone word such as "baseline" in place of one): never
    wrapped, so a digit or a marker cannot move away."""
    cells = [cell_text(c).strip() for c in col._cells]
    figures = [bool(c) and is_figure(c) for c in cells]  # each cell asked once
    return any(figures) and all(f or " " not in c for c, f in zip(cells, figures, strict=True))


def width_of(table: Table | plainprint.Table, console: Console | None) -> int:
    """The width `table` needs to print without wrapping anything (`console` must be wide;
    None for a plain table, measured without rich)."""
    if console is None:
        width = table.width()
        if width is not None:
            return width
        console = _wide()
    from rich.measure import Measurement

    return Measurement.get(console, console.options, table).maximum


def _wide() -> Console:
    from rich.console import Console

    return Console(width=100_000, color_system=None, force_terminal=False)


def _subtable(table: Table, cols: list[Column], part: int, parts: int) -> Table:
    sub = copy.copy(table)
    sub.columns = [dataclasses.replace(c, _index=i) for i, c in enumerate(cols)]
    if parts > 1:
        title = cell_text(table.title) if table.title else ""
        sub.title = f"{title} ({part}/{parts})".strip() if title else f"({part}/{parts})"
        sub.caption = table.caption if part == parts else None
    return sub


def _blocks(cols: list[Column], group: int | Sequence[int]) -> list[list[Column]]:
    sizes = [group] * len(cols) if isinstance(group, int) else [*group, *[1] * len(cols)]
    out, i = [], 0
    for n in sizes:
        if i >= len(cols):
            break
        out.append(cols[i:i + n])
        i += n
    return out


def fit(table: Any, width: int, keep: int = 1, group: int | Sequence[int] = 1) -> list[Any]:
    """`table` as one or more tables no wider than `width`. The first `keep` columns (row labels)
    are repeated in each; the others are moved in blocks of `group` columns (e.g. sim, measured,
    error), or of the sizes `group` lists in turn (e.g. (1, 1, 3): two figures, then a delta with
    its P(>0) and verdict), one column at a time past the list's end."""
    for col in table.columns:
        if _numeric(col):
            col.no_wrap = True
    # a plain table's width, measured once (no_wrap does not change it)
    natural = table.width() if isinstance(table, plainprint.Table) else None
    plain = natural is not None
    if isinstance(table, plainprint.Table) and (not plain or natural > width and any(
            not col.no_wrap for col in table.columns[keep:])):
        table, plain = table.__rich__(), False  # a cell rich changes, or columns to wrap: rich lays it out
    console = None if plain else _wide()
    blocks = _blocks(table.columns[keep:], group)
    if (natural if plain else width_of(table, console)) <= width or len(blocks) <= 1:
        return [table]
    for col in table.columns[keep:]:  # word columns (verdicts, notes) wrap, at spaces, before a cut
        if not col.no_wrap:
            words = [w for c in col._cells for w in cell_text(c).split()]
            col.max_width = max([_WORDS, *map(len, words)])
    if width_of(table, console) <= width:
        return [table]
    head = table.columns[:keep]
    chunks: list[list[Column]] = [[]]
    for block in blocks:
        trial = _subtable(table, head + chunks[-1] + block, 1, 1)
        if chunks[-1] and width_of(trial, console) > width:
            chunks.append([])
        chunks[-1] += block
    return [_subtable(table, head + c, i + 1, len(chunks)) for i, c in enumerate(chunks)]


def print_table(console: Any, table: Any, keep: int = 1,
                group: int | Sequence[int] = 1) -> None:
    """Print `table` at the console's width, cut into column blocks when it would not fit."""
    for t in fit(table, console.width, keep, group):
        console.print(t)


def footnote_dashes(table: Any, why: str) -> Any:
    """Say what a "-" cell means, below the table, when the table has one."""
    if any(cell_text(c).strip() == "-" for col in table.columns for c in col._cells):
        note = f"-: {why}"
        table.caption = f"{cell_text(table.caption)}\n{note}" if table.caption else note
        table.caption_justify = "left"
    return table


COMMAND = "  mtpsim "  # a line that is a command to run: indented, never wrapped


def print_lines(console: Any, lines: list[str]) -> None:
    """Print prose wrapped at the console's width (at spaces), and each command line (one that
    starts with COMMAND) whole on its own line, so it can be copied and run as printed. The
    lines are plain text, not rich markup: a spec table such as [calibration.measured.fresh] in
    a line (or a path) is printed as written, not dropped as a style tag."""
    for line in lines:
        console.print(line, highlight=False, markup=False, soft_wrap=line.startswith(COMMAND))
