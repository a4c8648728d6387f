"""Printed to a file, `mtpsim simulate` lays its tables and lines out without rich's console
(`mtpsim.plainprint`) and writes byte for byte what rich writes: the whole output at several
widths, random tables and lines, and rich's own view of the terminal (width, is it one)."""

from __future__ import annotations

import io
import random
import subprocess
import sys
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


def _simulate(args: list[str], width: int) -> str:
    r = CliRunner().invoke(app, ["simulate", *args], env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.output
    return r.output.rsplit("\nsimulated ", 1)[0]  # the last line holds the wall time


@pytest.mark.parametrize("width", [60, 80, 100, 120, 200])
def test_simulate_prints_what_rich_prints(monkeypatch, width):
    args = [PR, "--set", "workload.num_prompts=24"]
    plain = _simulate(args, width)
    monkeypatch.setattr(plainprint, "printed", lambda *a, **k: None)  # everything through rich
    assert plain == _simulate(args, width)


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


def test_random_tables_print_as_rich_prints_them(monkeypatch):
    rng = random.Random(3)
    laid_out = 0
    for _ in range(300):
        box = rng.random() < 0.8
        t = Table(title=_text(rng, 12) or None, title_justify="left", box=box,
                  pad_edge=box or rng.random() < 0.5)
        ncols = rng.randint(1, 5)
        for _ in range(ncols):
            header = _text(rng, 3) + ("\n" + _text(rng, 2) if rng.random() < 0.3 else "")
            t.add_column(header, justify=rng.choice(["left", "right"]))
        for _ in range(rng.randint(0, 4)):
            t.add_row(*[Styled(_text(rng, 2), "color(2)") if rng.random() < 0.1 else _text(rng, 3)
                        for _ in range(ncols)])
        if rng.random() < 0.4:
            t.caption, t.caption_justify = _text(rng, 15), "left"
        width = rng.randint(20, 140)
        monkeypatch.setenv("COLUMNS", str(width))
        mine = printed(t, io.StringIO())
        if mine is not None:
            laid_out += 1
            assert mine == _rich(t, width), (width, mine)
    assert laid_out > 100


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
