"""What `mtpsim simulate` prints: the trace fit, the headline, the PR's benchmark table, the
phases, the prefill breakdown, acceptance per position, simulated vs measured, the KV cache and
the wall clock; or the run as JSON. Rendering only: mtpsim.runs.simulate made the run."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mtpsim.console import StdConsole
    from mtpsim.runs.simulate import PolicyProgress, SimulateRun


BARS_AFTER_S = 0.5  # a run shorter than this shows no bar (it would only flash)


@contextlib.contextmanager
def policy_bars(console: StdConsole, enabled: bool) -> Iterator[PolicyProgress | None]:
    """A progress bar per policy while it simulates (on `console`, gone when done), shown once
    the run has taken BARS_AFTER_S, with every policy so far; None if not `enabled`. A shorter
    run (most) shows none and does not import rich's progress and console layers (~0.08 s)."""
    if not enabled:
        yield None
        return
    with contextlib.ExitStack() as stack:
        yield _DelayedBars(console, stack).start


class _DelayedBars:
    """rich progress bars that appear BARS_AFTER_S after the first policy started (the
    experiment loaded: its load and imports do not count)."""

    def __init__(self, console: StdConsole, stack: contextlib.ExitStack) -> None:
        self.console, self.stack = console, stack
        self.t0: float | None = None
        self.state: dict[str, list[int]] = {}  # policy -> [total, completed]
        self.bar: Any = None
        self.tasks: dict[str, Any] = {}

    def start(self, policy: str, total: int) -> Callable[[int, int], None]:
        self.state[policy] = [total, 0]
        if self.t0 is None:
            self.t0 = time.monotonic()
        if self.bar is not None:
            self.tasks[policy] = self.bar.add_task(f"simulating {policy}", total=total)

        def update(done: int, _n: int) -> None:
            self.state[policy][1] = done
            if self.bar is None:
                if time.monotonic() - self.t0 < BARS_AFTER_S:  # type: ignore[operator]
                    return
                self._show()
            self.bar.update(self.tasks[policy], completed=done)
        return update

    def _show(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = self.stack.enter_context(Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            console=self.console.current(), transient=True))
        for policy, (total, done) in self.state.items():
            self.tasks[policy] = self.bar.add_task(f"simulating {policy}", total=total,
                                                   completed=done)


def run_json(run: SimulateRun) -> dict[str, Any]:
    """`--json`: the results without per-request records, the trace fit if there was one, and the
    lines stderr also carries (a far calibration's warning, the trace fit's notes) where any."""
    payload = {name: {k: v for k, v in res.to_json().items() if k != "requests"}
               for name, res in run.results.items()}
    extra = {} if run.calibration is None else {"calibration": run.calibration.to_json()}
    said = {k: v for k, v in (("warnings", run.warnings), ("notes", run.notes)) if v}
    return {"experiment": run.experiment, "wall_s": run.wall_s, "results": payload, **extra, **said}


def print_run(console: StdConsole, run: SimulateRun, *, plot: Path | None = None,
              trace: Sequence[Path] = (), save_calibration: Path | None = None,
              written: Sequence[Path] = ()) -> None:
    """The text report, top to bottom; `plot` also writes the PNGs there."""
    from mtpsim.report.fit import print_table
    from mtpsim.report.tables import (
        acceptance_terminal,
        kv_lines,
        measured_table,
        phase_table,
        pr_table,
        prefill_table,
        summary_lines,
    )
    from mtpsim.report.titles import setup_title

    exp, results = run.exp, run.results
    if run.calibration is not None:
        from mtpsim.report.calibration import fit_tables

        for table in fit_tables(run.calibration):
            print_table(console, table)
        if save_calibration is not None:
            console.print(f"calibration written to {save_calibration}", highlight=False)
    for line in run.notes:
        console.print(line, highlight=False, markup=False)
    from mtpsim.report.headline import headline

    for line in headline(exp, results, overridden=run.overridden,
                          setup_changed=bool(run.setup_changed)):
        console.print(line, highlight=False, markup=False)
    print_table(console, pr_table(results, title=setup_title(exp, "simulated")))
    for line in summary_lines(results):
        console.print(line, highlight=False)
    print_table(console, phase_table(results))
    if run.calibration is None and not exp.calibration.file:  # a trace fit prices steps otherwise
        print_table(console, prefill_table(exp, exp.policies[0]))
    console.print(acceptance_terminal(results))
    if plot is not None:
        from mtpsim.report.plots import simulate_plots

        for p in simulate_plots(results, plot, list(trace)):
            console.print(f"plot: {p}", highlight=False)
    cal = exp.calibration
    if run.setup_changed and cal.measured:
        console.print("measured rows not shown: --set changed the measured setup "
                      f"({', '.join(run.setup_changed)})", highlight=False)
    elif any(p in cal.measured for p in results):
        print_table(console, measured_table(results, cal.measured, cal.fit_metrics, cal.fit_policy),
                    group=3)
        if cal.measured_source:
            console.print(f"measured: {cal.measured_source}", highlight=False)
    for line in kv_lines(results):
        console.print(line, highlight=False)
    sim_s = sum(float(r.get("duration")) for r in results.values())
    served = f"{sim_s:.1f}" if sim_s >= 1 else f"{sim_s:.2g}"  # 0.02 s, not 0.0 s
    speed = f" ({times(sim_s / run.wall_s)} real time)" if run.wall_s > 0 else ""
    console.print(f"simulated {served} s of serving in {run.wall_s:.2f} s wall{speed}",
                  highlight=False)
    if written:
        console.print(f"wrote {', '.join(str(p) for p in written)}", highlight=False)


def times(ratio: float) -> str:
    """A speed ratio: '2,345x' whole from 100 up, else two significant figures ('0.21x', '12x'),
    where a short run printed '0x'."""
    return f"{ratio:,.0f}x" if ratio >= 99.5 else f"{ratio:.2g}x"
