"""Printed to a file or a terminal, `mtpsim simulate` lays its tables and lines out without
rich's console (`mtpsim.plainprint`) and writes byte for byte what rich writes: the whole output at
several widths (in a terminal: with rich's styles, with and without NO_COLOR), random tables and
lines, rich's own view of the terminal (width, is it one), and a process printing to a
pseudo-terminal imports no rich console."""

from __future__ import annotations

import io
import os
import pty
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rich._emoji_replace import _emoji_replace
from rich.console import Console
from rich.markup import RE_TAGS
from typer.testing import CliRunner

from mtpsim import plainprint
from mtpsim.cli import app
from mtpsim.plainprint import Styled, Table, printed

ROOT = Path(__file__).resolve().parents[1]
PR = str(ROOT / "experiments" / "pr47352.toml")


def _simulate(args: list[str], width: int, env: dict[str, str] | None = None) -> str:
    r = CliRunner().invoke(app, ["simulate", *args], env={"COLUMNS": str(width), **(env or {})})
    assert r.exit_code == 0, r.output
    return r.stdout.rsplit("\nsimulated ", 1)[0]  # the last line holds the wall time


# rich's is_terminal for any stream (FORCE_COLOR), a terminal with colours
TERMINAL = {"FORCE_COLOR": "1", "TERM": "xterm-256color", "NO_COLOR": ""}


@pytest.mark.parametrize("width", [60, 80, 100, 120, 200])
def test_simulate_prints_what_rich_prints(monkeypatch, width):
    args = [PR, "--set", "workload.num_prompts=24"]
    plain = _simulate(args, width)
    monkeypatch.setattr(plainprint, "printed", lambda *a, **k: None)  # everything through rich
    assert plain == _simulate(args, width)


@pytest.mark.parametrize(("width", "no_color"), [(80, ""), (120, ""), (200, ""), (120, "1")])
def test_simulate_prints_to_a_terminal_what_rich_prints(monkeypatch, width, no_color):
    args = [PR, "--set", "workload.num_prompts=24"]
    env = {**TERMINAL, "NO_COLOR": no_color}
    mine = _simulate(args, width, env)
    assert "\x1b[1m" in mine and "\x1b[3m" in mine  # styled: header bold, title italic
    assert ("\x1b[31m" in mine) == (not no_color)  # the acceptance bars' colour
    monkeypatch.setattr(plainprint, "printed", lambda *a, **k: None)  # everything through rich
    assert mine == _simulate(args, width, env)


def test_other_simulate_outputs_print_what_rich_prints(monkeypatch):
    cases = [[PR, "--set", "workload.num_prompts=16", "-p", "share", "-p", "fresh", "--expected"],
             [PR, "--set", "workload.num_prompts=16", "--seed", "3"]]
    plain = [_simulate(a, 80) for a in cases]
    monkeypatch.setattr(plainprint, "printed", lambda *a, **k: None)
    assert plain == [_simulate(a, 80) for a in cases]


def _rich(obj: object, width: int, **kwargs: object) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width).print(obj, **kwargs)
    return buf.getvalue()


WORDS = ["fresh", "share", "1,629.90*", "+0.52 pp", "-", "Δ share", "vs fresh", "µs", "−0.47 %",
         "[610, 1,370]", "(90 %", "a", "averyveryverylongwordthatmustfold", "██▍", "x" * 12, "·"]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, n)))


def _random_table(rng: random.Random, cell) -> Table:
    """A table of random words: title, 1-5 columns (some two-line headers), 0-4 rows whose
    cells `cell(rng)` makes, and sometimes a caption."""
    box = rng.random() < 0.8
    t = Table(title=_text(rng, 12) or None, title_justify="left", box=box,
              pad_edge=box or rng.random() < 0.5)
    ncols = rng.randint(1, 5)
    for _ in range(ncols):
        header = _text(rng, 3) + ("\n" + _text(rng, 2) if rng.random() < 0.3 else "")
        t.add_column(header, justify=rng.choice(["left", "right"]))
    for _ in range(rng.randint(0, 4)):
        t.add_row(*[cell(rng) for _ in range(ncols)])
    if rng.random() < 0.4:
        t.caption, t.caption_justify = _text(rng, 15), "left"
    return t


def test_random_tables_print_as_rich_prints_them(monkeypatch):
    rng = random.Random(3)
    laid_out = 0
    for _ in range(300):
        t = _random_table(rng, lambda r: Styled(_text(r, 2), "color(2)") if r.random() < 0.1
                          else _text(r, 3))
        width = rng.randint(20, 140)
        monkeypatch.setenv("COLUMNS", str(width))
        mine = printed(t, io.StringIO())
        if mine is not None:
            laid_out += 1
            assert mine == _rich(t, width), (width, mine)
    assert laid_out > 100


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_random_tables_print_to_a_terminal_as_rich_prints_them(monkeypatch):
    rng = random.Random(11)
    laid_out = 0
    for _ in range(400):
        t = _random_table(rng, lambda r: Styled(
            _text(r, 2) + ("\n" + _text(r, 1) if r.random() < 0.2 else ""),
            f"color({r.randint(0, 15)})") if r.random() < 0.3 else _text(r, 3))
        width = rng.randint(20, 140)
        for key, value in {"COLUMNS": str(width), "NO_COLOR": "1" if rng.random() < 0.2 else "",
                           "TERM": rng.choice(["xterm", "xterm-256color", "screen"])}.items():
            monkeypatch.setenv(key, value)
        mine = printed(t, _Terminal())
        if mine is not None:
            laid_out += 1
            rich = _Terminal()
            Console(file=rich).print(t)
            assert mine == rich.getvalue(), (width, mine)
    assert laid_out > 100


def test_what_a_terminal_leaves_to_rich(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("COLUMNS", "80")
    t = Table(title="t", title_justify="left")
    t.add_column("a")
    t.add_row(Styled("x", "bold red"))  # a style other than a standard colour
    assert printed(t, _Terminal()) is None
    assert printed("1.5 s", _Terminal()) is None  # rich would highlight the number
    assert printed("1.5 s", _Terminal(), highlight=False) == "1.5 s\n"
    monkeypatch.setenv("TERM", "dumb")  # no colour system, rich's own width
    assert printed("a", _Terminal(), highlight=False) is None


def test_random_lines_print_as_rich_prints_them(monkeypatch):
    rng = random.Random(5)
    for _ in range(400):
        width = rng.randint(10, 120)
        monkeypatch.setenv("COLUMNS", str(width))
        line = _text(rng, 30) + rng.choice(["", " ", "  ", "\n" + _text(rng, 5), " [bold]x[/bold]",
                                             " \\[a]", " :smile: x", "\tb"])
        kwargs = {"markup": rng.random() < 0.5, "soft_wrap": rng.random() < 0.2,
                  "highlight": False}
        mine = printed(line, io.StringIO(), **kwargs)
        if mine is not None:
            assert mine == _rich(line, width, **kwargs), (line, width, kwargs)


def test_what_is_left_to_rich():
    wide = Table(title="t", title_justify="left")
    wide.add_column("a")
    wide.add_row("x" * 100)
    stream = io.StringIO()
    assert printed(wide, stream) is None  # a column rich would wrap
    assert printed("[bold]b[/bold]", stream) is None and printed("a :smile: b", stream) is None
    assert printed("[bold]b[/bold]", stream, markup=False, emoji=False) == "[bold]b[/bold]\n"


@pytest.mark.parametrize("env", [{}, {"COLUMNS": "77"}, {"FORCE_COLOR": "1"}, {"FORCE_COLOR": ""},
                                 {"TTY_COMPATIBLE": "1"}, {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}])
def test_terminal_and_width_as_rich_sees_them(monkeypatch, env):
    for key in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    stream = io.StringIO()
    console = Console(file=stream)
    assert plainprint.is_terminal(stream) == console.is_terminal
    assert plainprint.console_width() == console.width


def test_the_patterns_are_richs():
    assert plainprint.RE_TAGS.pattern == RE_TAGS.pattern
    assert plainprint.RE_EMOJI.pattern == _emoji_replace.__defaults__[1].__self__.pattern


def test_cell_widths_are_richs():
    """plainprint counts printable ASCII itself (one cell a character) and asks rich for the rest."""
    from rich.cells import cell_len

    ascii_ = [chr(c) for c in range(128)]
    others = ["−", "·", "±", "µ", "é", "中文", "👍", "e\u0301", "\u200d", "a\tb", "1,234.5 % [−1, +2]"]
    rng = random.Random(7)
    samples = ascii_ + others + ["".join(rng.choices(ascii_ + others, k=rng.randint(0, 12)))
                                 for _ in range(300)]
    assert [plainprint.cell_len(s) for s in samples] == [cell_len(s) for s in samples]


def test_a_simulate_process_printing_to_a_file_imports_no_rich_console():
    probe = ("import sys\nfrom mtpsim.cli import main\nsys.argv = ['mtpsim', *sys.argv[1:]]\n"
             "try:\n    main()\nfinally:\n"
             "    print('RICH', *sorted(m for m in ('rich.console', 'rich.table', 'rich.text') "
             "if m in sys.modules), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", probe, "simulate", PR, "--set", "workload.num_prompts=8"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "Per-position acceptance" in r.stdout
    assert r.stderr.rsplit("RICH", 1)[1].split() == []


def test_a_simulate_process_printing_to_a_terminal_imports_no_rich_console():
    """stdout and stderr a pseudo-terminal, as in a user's shell: the tables in rich's styles,
    and no rich console, table or progress bar imported (a short run shows no bar)."""
    probe = ("import sys\nfrom mtpsim.cli import main\nfrom mtpsim.report import simulate\n"
             "simulate.BARS_AFTER_S = 600  # however loaded the machine: no bar (tested apart)\n"
             "sys.argv = ['mtpsim', *sys.argv[1:]]\ntry:\n    main()\nfinally:\n"
             "    print('RICH', *sorted(m for m in ('rich.console', 'rich.table', 'rich.text', "
             "'rich.progress') if m in sys.modules))")
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        try:
            while data := os.read(master, 65536):
                chunks.append(data)
        except OSError:  # the terminal's other end closed
            pass

    reader = threading.Thread(target=drain)
    reader.start()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
    for key in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE"):
        env.pop(key, None)
    r = subprocess.run([sys.executable, "-c", probe, "simulate", PR, "--set", "workload.num_prompts=8"],
                       cwd=ROOT, stdout=slave, stderr=slave, env=env, timeout=300)
    os.close(slave)
    reader.join()
    os.close(master)
    out = b"".join(chunks).decode()
    assert r.returncode == 0, out
    assert "Per-position acceptance" in out and "\x1b[1m" in out
    assert out.rsplit("RICH", 1)[1].split() == []
