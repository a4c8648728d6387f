"""`mtpsim simulate`'s progress bars (a terminal only) appear once the simulation has run
BARS_AFTER_S: a shorter run shows none, and a longer one shows every policy so far, each at its
count, and the policies that start after it."""

from __future__ import annotations

import io
import sys

from rich.console import Console

from mtpsim.report import simulate as report


class _Console:
    """StdConsole's `current()`, on a buffer rich treats as a terminal."""

    def __init__(self) -> None:
        self.buf = io.StringIO()
        self.rich = Console(file=self.buf, force_terminal=True, width=80)

    def current(self) -> Console:
        return self.rich


def test_a_short_run_shows_no_bar(monkeypatch):
    monkeypatch.setattr(report, "BARS_AFTER_S", 600.0)
    console = _Console()
    with report.policy_bars(console, enabled=True) as start:  # type: ignore[arg-type]
        for policy in ("fresh", "share"):
            tick = start(policy, 10)
            for done in range(11):
                tick(done, 10)
    assert console.buf.getvalue() == ""


def test_a_long_run_shows_every_policy_at_its_count(monkeypatch):
    monkeypatch.setattr(report, "BARS_AFTER_S", 600.0)
    console = _Console()
    with report.policy_bars(console, enabled=True) as start:  # type: ignore[arg-type]
        fresh = start("fresh", 10)
        fresh(4, 10)
        monkeypatch.setattr(report, "BARS_AFTER_S", 0.0)  # the wait is over
        fresh(7, 10)
        share = start("share", 20)
        share(5, 20)
        bars = start.__self__.bar  # type: ignore[attr-defined]
        tasks = {t.description: (t.completed, t.total) for t in bars.tasks}
        assert tasks == {"simulating fresh": (7, 10), "simulating share": (5, 20)}
    assert "simulating fresh" in console.buf.getvalue()
    assert "rich.progress" in sys.modules


def test_no_bars_where_not_enabled():
    with report.policy_bars(_Console(), enabled=False) as start:  # type: ignore[arg-type]
        assert start is None
