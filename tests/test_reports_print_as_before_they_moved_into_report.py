"""Every reporting command prints, at 120 columns, the text it printed before the tables, plots
and number formatters moved into mtpsim/report/ (tests/data/golden_reports/, captured with the
code before; scripts/golden_reports.py --write recaptures after a deliberate change)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole processes, ~35 s in all

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("golden_reports", ROOT / "scripts" / "golden_reports.py")
golden = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
sys.modules["golden_reports"] = golden
_spec.loader.exec_module(golden)  # type: ignore[union-attr]


@pytest.mark.parametrize("name", list(golden.COMMANDS))
def test_report_text_is_byte_identical(name):
    got, want = golden.capture(name), (golden.GOLDEN / f"{name}.txt").read_text()
    assert golden.same(got, want), got


def test_numbers_may_differ_only_in_their_last_digit_by_one():
    assert golden.same("kappa 3.96 / 2.98 |res| 11.46", "kappa 3.95 / 2.98 |res| 11.47")
    assert not golden.same("kappa 3.97", "kappa 3.95")  # two units
    assert not golden.same("kappa 3.9", "kappa 3.95")  # other precision
    assert not golden.same("kappa 3.95 x", "kappa 3.95 y")  # words
    assert not golden.same("1,234", "1,236") and golden.same("1,234", "1,235")
    assert not golden.same("kappa  3.95", "kappa 3.95")  # layout
