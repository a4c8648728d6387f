"""Tables that fit the terminal: a table wider than the console is cut into several, each
repeating the row labels and holding whole column groups, so no number is wrapped, truncated or
loses its marker. Only word columns (labels, verdicts) may wrap, and only at spaces."""

from __future__ import annotations

import copy
import dataclasses
import re

from rich.console import Console
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

_WORDS = 16  # the narrowest a column of words is made before the table is cut
_NUMBER = re.compile(r"^[-+±\[\]()., %*0-9a-zµ/]*[0-9][-+±\[\]()., %*0-9a-zµ/]*$|^-$")


def cell_text(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain


def is_figure(text: str) -> bool:
    """A number with its unit or marker ("1,629.90*", "+0.52 pp", "[-9.90, -1.10]", "-")."""
    return bool(_NUMBER.match(text)) and len(text.split()) <= 2 and sum(c.isalpha() for c in text) <= 3


def _numeric(col: Column) -> bool:
    """A column of figures (and "-"): never wrapped, so a digit or a marker cannot move away."""
    cells = [cell_text(c).strip() for c in col._cells]
    return bool(cells) and all(not c or is_figure(c) for c in cells)


def width_of(table: Table, console: Console) -> int:
    """The width `table` needs to print without wrapping anything (`console` must be wide)."""
    return Measurement.get(console, console.options, table).maximum


def _subtable(table: Table, cols: list[Column], part: int, parts: int) -> Table:
    sub = copy.copy(table)
    sub.columns = [dataclasses.replace(c, _index=i) for i, c in enumerate(cols)]
    if parts > 1:
        title = cell_text(table.title) if table.title else ""
        sub.title = f"{title} ({part}/{parts})".strip() if title else f"({part}/{parts})"
        sub.caption = table.caption if part == parts else None
    return sub


def fit(table: Table, width: int, keep: int = 1, group: int = 1) -> list[Table]:
    """`table` as one or more tables no wider than `width`. The first `keep` columns (row labels)
    are repeated in each; the others are moved in blocks of `group` (e.g. sim, measured, error)."""
    for col in table.columns:
        if _numeric(col):
            col.no_wrap = True
    console = Console(width=100_000, color_system=None, force_terminal=False)
    if width_of(table, console) <= width or len(table.columns) <= keep + group:
        return [table]
    for col in table.columns[keep:]:  # word columns (verdicts, notes) wrap, at spaces, before a cut
        if not col.no_wrap:
            words = [w for c in col._cells for w in cell_text(c).split()]
            col.max_width = max([_WORDS, *map(len, words)])
    if width_of(table, console) <= width:
        return [table]
    head, rest = table.columns[:keep], table.columns[keep:]
    blocks = [rest[i:i + group] for i in range(0, len(rest), group)]
    chunks: list[list[Column]] = [[]]
    for block in blocks:
        trial = _subtable(table, head + chunks[-1] + block, 1, 1)
        if chunks[-1] and width_of(trial, console) > width:
            chunks.append([])
        chunks[-1] += block
    return [_subtable(table, head + c, i + 1, len(chunks)) for i, c in enumerate(chunks)]


def print_table(console: Console, table: Table, keep: int = 1, group: int = 1) -> None:
    """Print `table` at the console's width, cut into column blocks when it would not fit."""
    for t in fit(table, console.width, keep, group):
        console.print(t)


def footnote_dashes(table: Table, why: str) -> Table:
    """Say what a "-" cell means, below the table, when the table has one."""
    if any(cell_text(c).strip() == "-" for col in table.columns for c in col._cells):
        note = f"-: {why}"
        table.caption = f"{cell_text(table.caption)}\n{note}" if table.caption else note
        table.caption_justify = "left"
    return table
