"""Tables and lines printed as rich prints them, without importing rich's console.

Importing rich's console and table layers and laying a table out through them costs ~0.1 CPU-s,
a quarter of what a short `mtpsim simulate` took before. `Table` (the subset of
`rich.table.Table` the reports use) and plain strings are laid out here with rich's own
word-wrapping and cell widths: to a file, where rich prints no style at all, and to a terminal,
where rich's default theme styles a table's title (italic), header (bold) and caption (dim
italic) and a `Styled` cell has its colour; each styled piece is written as rich writes its
segments (SGR codes around it, reset after). Whatever this module does not lay out exactly as
rich does (a table that does not fit and would wrap a column, markup, emoji codes, control
characters, a highlighted string or a style other than a standard colour in a terminal, another
box or justification, a dumb terminal) returns None, and rich prints it instead
(`Table.__rich__`). Tests compare the renderings byte for byte.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from mtpsim.dataclass import dataclass

# rich.markup.RE_TAGS and rich._emoji_replace's pattern: a string either could change is left to rich
RE_TAGS = re.compile(r"""((\\*)\[([a-z#/@][^[]*?)])""", re.VERBOSE)
RE_EMOJI = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")

# rich.box.HEAVY_HEAD: top, header, header rule, body, bottom (left, fill, divider, right)
_TOP, _HEAD, _RULE, _BODY, _BOTTOM = "┏━┳┓", "┃ ┃┃", "┡━╇┩", "│ ││", "└─┴┘"
# SGR parameters of rich's default theme: table.header, table.title, table.caption
_BOLD, _ITALIC, _DIM_ITALIC = "1", "3", "2;3"
_COLOR = r"color\((\d{1,2})\)"  # compiled on first use (a terminal only)
Segment = tuple[str, "str | None"]  # text and its SGR parameters (None: unstyled)


@dataclass
class Styled:
    """A cell with a style (e.g. a bar's colour), which a file never shows."""

    text: str
    style: str

    def __str__(self) -> str:
        return self.text


@dataclass
class Column:
    """A table column: its header, justification and whether it may wrap."""

    header: str = ""
    justify: str = "left"
    no_wrap: bool = False
    max_width: int | None = None
    _cells: list[Any] = field(default_factory=list)
    _index: int = 0


class Table:
    """A table as rich.table.Table is built (the subset the reports use): HEAVY_HEAD box or
    none, padding 1 left and right, header shown. Printed plainly where `lines` can, else as the
    rich Table it stands for."""

    def __init__(self, title: str | None = None, caption: str | None = None,
                 title_justify: str = "center", caption_justify: str = "center",
                 box: bool = True, pad_edge: bool = True) -> None:
        self.title, self.caption = title, caption
        self.title_justify, self.caption_justify = title_justify, caption_justify
        self.box, self.pad_edge = box, pad_edge
        self.columns: list[Column] = []

    def add_column(self, header: str = "", justify: str = "left") -> None:
        self.columns.append(Column(header, justify, _index=len(self.columns)))

    def add_row(self, *cells: Any) -> None:
        for col, cell in zip(self.columns, cells, strict=True):
            col._cells.append(cell)

    @property
    def row_count(self) -> int:
        return len(self.columns[0]._cells) if self.columns else 0

    def __rich__(self) -> Any:
        """The rich Table this stands for (for a terminal, or whatever `lines` leaves to rich)."""
        from rich import box
        from rich.table import Table as RichTable
        from rich.text import Text

        t = RichTable(title=self.title, caption=self.caption, title_justify=self.title_justify,
                      caption_justify=self.caption_justify, pad_edge=self.pad_edge,
                      box=box.HEAVY_HEAD if self.box else None)
        for col in self.columns:
            t.add_column(col.header, justify=col.justify, no_wrap=col.no_wrap, max_width=col.max_width)
        for i in range(self.row_count):
            t.add_row(*[Text(c.text, style=c.style) if isinstance(c, Styled) else c
                        for c in (col._cells[i] for col in self.columns)])
        return t

    def _pad(self, i: int) -> tuple[int, int]:
        last = len(self.columns) - 1
        return (0 if not self.pad_edge and i == 0 else 1), (0 if not self.pad_edge and i == last else 1)

    def natural_widths(self) -> list[int] | None:
        """Each column's width (padding included) with nothing wrapped, as rich measures it; None
        where rich would change a cell's text or a column has a width limit."""
        widths = []
        for col in self.columns:
            texts = [str(c) for c in (col.header, *col._cells)]
            if col.max_width is not None or not all(map(plain, texts)) or any(
                    "\n" in t and "" in t.split("\n") for t in texts):  # rich's blank lines: left to it
                return None
            left, right = self._pad(col._index)
            widths.append((max(cell_len(ln) for t in texts for ln in t.splitlines() or [""])
                           + left + right) or 1)
        return widths

    def width(self) -> int | None:
        widths = self.natural_widths()
        return None if widths is None else sum(widths) + self._extra()

    def _extra(self) -> int:
        return len(self.columns) + 1 if self.box else 0

    def lines(self, width: int, styled: bool = False, colours: bool = True) -> list[str] | None:
        """The table printed at console width `width`, or None where rich would lay it out
        otherwise (a column to wrap, a title or cell rich would change). `styled`: as rich prints
        it to a terminal (title, header, caption and `Styled` cells in their styles; `colours`
        False: without colours, as rich does under NO_COLOR)."""
        widths = self.natural_widths()
        if not self.columns or widths is None or sum(widths) > width - self._extra():
            return None
        if self.title_justify != "left" or self.caption_justify != "left" and self.caption:
            return None
        if styled and any(w == sum(self._pad(i)) for i, w in enumerate(widths)):
            return None  # an empty column rich writes as one segment, padding and all
        total = sum(widths) + self._extra()
        title, caption = _annotation(self.title, total), _annotation(self.caption, total)
        if title is None or caption is None:
            return None
        rows = [[(col.header, _BOLD if styled else None) for col in self.columns]]
        for i in range(self.row_count):
            row = [_cell_style(col._cells[i], styled, colours) for col in self.columns]
            if any(style is False for _, style in row):
                return None  # a style only rich knows how to write
            rows.append(row)  # type: ignore[arg-type]
        out = [_sgr(ln, _ITALIC if styled else None) for ln in title]
        out += [_rule(_TOP, widths)] if self.box else []
        for r, row in enumerate(rows):
            out += self._row_lines(row, widths, header=r == 0)
            if r == 0 and self.box:
                out.append(_rule(_RULE, widths))
        out += [_rule(_BOTTOM, widths)] if self.box else []
        return out + [_sgr(ln, _DIM_ITALIC if styled else None) for ln in caption]

    def _row_lines(self, row: list[tuple[str, str | None]], widths: list[int],
                   header: bool) -> list[str]:
        """One row's lines: each cell's lines, padded to the row's height (header cells sit at
        the bottom of their row, body cells at the top: rich's rule). A header filler line is in
        the header's style, a body cell's in none (rich pads with the cell's style)."""
        cells = [self._cell(text, col, w, style, style if header else None)
                 for (text, style), col, w in zip(row, self.columns, widths, strict=True)]
        height = max(map(len, cells))
        filled = []
        for (_, style), c, w in zip(row, cells, widths, strict=True):
            filler = [[(" " * w, style if header else None)]] * (height - len(c))
            filled.append(filler + c if header else c + filler)
        edge = _HEAD if header else _BODY
        out = []
        for k in range(height):
            parts = ["".join(_sgr(t, st) for t, st in c[k]) for c in filled]
            out.append(f"{edge[0]}{edge[2].join(parts)}{edge[3]}" if self.box else "".join(parts))
        return out

    def _cell(self, text: str, col: Column, width: int, style: str | None,
              pad_style: str | None) -> list[list[Segment]]:
        """A cell's lines as rich's segments: left padding, the justified text, right padding
        (the padding in the cell's style: the header's, or none in the body)."""
        left, right = self._pad(col._index)
        inner = width - left - right
        lines = []
        for ln in text.split("\n"):
            if col.justify == "right":
                ln = ln.rstrip()
                ln = " " * (inner - cell_len(ln)) + ln
            else:
                ln += " " * (inner - cell_len(ln))
            lines.append([(" " * left, pad_style), (ln, style), (" " * right, pad_style)])
        return lines


def _cell_style(cell: Any, styled: bool, colours: bool) -> tuple[str, str | None | bool]:
    """A body cell's text and SGR parameters: a `Styled` cell's standard colour (color(0) to
    color(15)) in a terminal; False for a style this module does not write."""
    if not isinstance(cell, Styled) or not styled:
        return str(cell), None
    m = re.fullmatch(_COLOR, cell.style.strip())
    if m is None or int(m.group(1)) > 15:
        return cell.text, False
    if not colours:
        return cell.text, None
    n = int(m.group(1))
    return cell.text, str(30 + n if n < 8 else 90 + n - 8)


def _sgr(text: str, params: str | None) -> str:
    """`text` as rich writes a segment in a style: SGR on, the text, reset; empty text as is."""
    return f"\x1b[{params}m{text}\x1b[0m" if params and text else text


def _rule(chars: str, widths: Sequence[int]) -> str:
    return chars[0] + chars[2].join(chars[1] * w for w in widths) + chars[3]


def cell_len(text: str) -> int:
    """`rich.cells.cell_len`: printable ASCII (rich's single-cell range U+0020-U+007E) is one cell
    a character, counted without rich's cache and character set (most cells are figures)."""
    if text.isascii() and text.isprintable():
        return len(text)
    from rich.cells import cell_len as rich_cell_len

    return rich_cell_len(text)


def plain(text: str) -> bool:
    """Whether rich prints `text` (markup and emoji codes on) as it is. A tag needs a "[" and an
    emoji code a ":", so most cells (figures, labels) skip those searches (a printed simulate
    asks this ~1,700 times)."""
    return "\\[" not in text and not (("[" in text and RE_TAGS.search(text))
                                       or (":" in text and RE_EMOJI.search(text))
                                       or _CONTROL.search(text))


def _annotation(text: str | None, width: int) -> list[str] | None:
    """A left-justified title or caption `width` wide: rich's wrapped lines, padded."""
    if not text:
        return []
    if not plain(text):
        return None
    lines = wrap(text, width)
    return [ln + " " * (width - cell_len(ln)) for ln in lines]


def wrap(text: str, width: int) -> list[str]:
    """`text` wrapped at `width` cells as rich wraps it: at spaces, a space kept at the end of the
    line it ends, a word wider than the line folded, trailing spaces past `width` cut."""
    from rich._wrap import divide_line

    out = []
    for line in text.split("\n"):
        cuts = [0, *divide_line(line, width, fold=True), len(line)]
        for a, b in zip(cuts, cuts[1:], strict=False):
            piece = line[a:b]
            excess = cell_len(piece) - width
            if excess > 0:  # rich's rstrip_end: only whitespace past the width goes
                stripped = piece.rstrip()
                piece = piece[:max(len(stripped), len(piece) - excess)]
            out.append(piece)
    return out


def printed(obj: object, stream: Any, markup: bool = True, emoji: bool = True,
            soft_wrap: bool = False, highlight: bool | None = None) -> str | None:
    """What rich's Console().print(obj, ...) writes to `stream`, or None where this module does
    not lay it out as rich does (markup or emoji codes to read, a table rich would wrap, a string
    rich would highlight in a terminal, a terminal whose styles rich decides otherwise)."""
    width = console_width()
    styled = styles(stream)
    if width is None or styled is None:
        return None
    if isinstance(obj, Table):
        lines = obj.lines(width, styled, colours=os.environ.get("NO_COLOR", "") == "")
        return None if lines is None else "".join(f"{ln}\n" for ln in lines)
    if not isinstance(obj, str) or _CONTROL.search(obj) or (styled and highlight is not False) or (
            markup and ("\\[" in obj or RE_TAGS.search(obj))) or (emoji and RE_EMOJI.search(obj)):
        return None
    return f"{obj}\n" if soft_wrap else "".join(f"{ln}\n" for ln in wrap(obj, width))


def console_width() -> int | None:
    """The width rich's Console() gives a plain output: COLUMNS, else the terminal of stdin,
    stdout or stderr, else 80; None where rich decides otherwise (Windows, Jupyter)."""
    if os.name == "nt" or hasattr(builtins, "get_ipython"):
        return None
    columns = usable_columns()
    if columns is not None:
        return columns
    width = None
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd)[0]
        except (AttributeError, ValueError, OSError):
            continue
        break
    return width or 80


def usable_columns() -> int | None:
    """COLUMNS as a width; None where it is unset or names no width (0, negative, not a whole
    number), which every console treats as unset: rich would print lines 0 columns wide, i.e.
    nothing at all, not even an error line."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isascii() and columns.isdigit() and int(columns) > 0 else None


def is_terminal(stream: Any) -> bool | None:
    """rich's `Console.is_terminal` for `stream`; None where rich decides otherwise (Windows,
    Jupyter, IDLE)."""
    if os.name == "nt" or hasattr(builtins, "get_ipython"):
        return None
    if getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return None
    tty_compatible, force_color = os.environ.get("TTY_COMPATIBLE", ""), os.environ.get("FORCE_COLOR")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "1"
    if force_color is not None:
        return force_color != ""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def styles(stream: Any) -> bool | None:
    """Whether rich prints styles to `stream` (UTF-8): False where it is not a terminal, True
    where it is (bold, italic and dim whatever the colour system, colours unless NO_COLOR);
    None where rich decides otherwise or lays out otherwise (another encoding, a dumb terminal,
    which rich gives no colour system and 80 columns; Windows, Jupyter, IDLE)."""
    encoding = (getattr(stream, "encoding", "utf-8") or "utf-8").lower()
    tty = is_terminal(stream)
    if tty is None or not encoding.startswith("utf"):
        return None
    if tty and os.environ.get("TERM", "").lower() in ("dumb", "unknown"):  # rich's is_dumb_terminal
        return None
    return tty


def is_plain(stream: Any) -> bool:
    """Whether rich would print to `stream` without any style (not a terminal, UTF-8)."""
    return styles(stream) is False
