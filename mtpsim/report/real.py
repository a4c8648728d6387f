"""What `mtpsim run-real` prints: a progress bar per policy round, the results and phase tables,
the indexer lines, the closing lines, a --smoke run's checks and the Ctrl-C line."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mtpsim.console import StdConsole
    from mtpsim.real.run import RealRun
    from mtpsim.runs.real import RealOutcome, Start


@contextlib.contextmanager
def policy_bars(console: StdConsole, engine: str) -> Iterator[Start]:
    """A transient bar on stderr per policy round, labelled with the engine; none when stderr
    is not a terminal (rich would end a bar there with a blank line, before any error line)."""
    if not console.is_terminal:
        yield lambda name, label, total: lambda done, n: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console.current(), transient=True) as bar:

        def start(name: str, label: str, total: int) -> Callable[[int, int], None]:
            task = bar.add_task(f"{engine}: {label}", total=total)
            return lambda done, _n: bar.update(task, completed=done)

        yield start


def resume(experiment: Path, engine: str, out: Path, sets: list[str] | None, policies: list[str] | None,
           seed: int | None, server: bool, trace: bool, bench_client: str,
           rounds: int | None = None, level_every: int = 0, probe_on: bool = True) -> list[str]:
    """The command that resumes this run: the same options (finished policies are skipped)."""
    from mtpsim.real.run import run_flags
    from mtpsim.report.interrupt import resume_argv
    from mtpsim.runs.real import DEFAULT_ENGINE

    opts = ["--engine", engine] if engine != DEFAULT_ENGINE else []
    opts += [x for s in sets or [] for x in ("--set", s)]
    opts += [x for p in policies or [] for x in ("-p", p)]
    opts += ["--seed", str(seed)] if seed is not None else []
    opts += ["--server"] * server
    opts += ["--rounds", str(rounds)] if rounds is not None else []
    opts += run_flags(trace, bench_client, level_every, probe_on)
    return resume_argv("run-real", str(experiment), str(out), opts)


def interrupted(state: RealRun, out: Path, resume: list[str]) -> str:
    """The Ctrl-C line: the policies (or rounds) kept, those not, and the rerun."""
    from mtpsim.report.interrupt import interrupted_line

    policies, results, progress = state.exp.policies, state.results, state.progress
    n_rounds = len(state.plan)
    if n_rounds > 1:  # a round on disk is kept; a policy is complete once all its rounds are
        done_rounds = state.done_rounds or {}
        kept = [f"{p} ({out / f'{p}.json'})" if p in results else
                f"{p} rounds {len(done_rounds[p])}/{n_rounds} ({out / 'rounds'})"
                for p in policies if p in results or done_rounds.get(p)]
        lost = [f"{p} (round in progress, {progress[p]} requests done; a round's result is written "
                "only once it completes)" if p in progress else f"{p} (rest not started)"
                for p in policies if p not in results]
        return interrupted_line(kept, lost, resume)
    num_prompts = state.exp.workload.num_prompts
    kept = [f"{p} ({out / f'{p}.json'})" for p in policies if p in results]
    lost = [f"{p} (in progress, {progress[p]}/{num_prompts} requests done; a policy's result is "
            "written only once it completes)" if p in progress else f"{p} (not started)"
            for p in policies if p not in results]
    return interrupted_line(kept, lost, resume)


def print_run(console: StdConsole, outcome: RealOutcome) -> None:
    """The results table, the summary and phase tables, per-policy indexer lines and the
    closing lines (rounds, and how to simulate them)."""
    from mtpsim.report.fit import print_table
    from mtpsim.report.tables import phase_table, pr_table, summary_lines
    from mtpsim.report.titles import setup_title

    setup = outcome.setup
    exp, out, plan, results = setup.exp, setup.out, setup.plan, outcome.state.results
    print_table(console, pr_table(results, title=setup_title(exp, setup.engine,
                                                             own_model=setup.real.caps.own_model)))
    for line in summary_lines(results):
        console.print(line, highlight=False)
    if any(res.phases for res in results.values()):  # served runs time no engine phases
        print_table(console, phase_table(results))
    for name, res in results.items():
        x = res.extra
        if x.sharing_engaged:
            console.print(f"{name}: {x.sharing_engaged}", highlight=False)
        if x.mtp_indexer_calls_per_step is None:
            continue
        share = x.indexer_share_of_draft_decode
        ov = ", ".join("-" if o is None else f"{o:.3f}" for o in x.mean_overlap_per_step or [])
        console.print(f"{name}: {res.get('output_throughput', float('nan')):.1f} output tok/s, "
                      f"MTP indexer calls per draft step {x.mtp_indexer_calls_per_step}, "
                      f"top-k overlap at steps 1.. [{ov}], indexer share of draft steps >= 1: "
                      f"{'-' if share is None else f'{100 * share:.1f}%'}", highlight=False)
    ran = [p for p in results if p not in setup.kept]
    resumed = f" ({len(results) - len(ran)} kept from an earlier run)" if len(ran) < len(results) else ""
    console.print(f"{len(ran)} polic{'y' if len(ran) == 1 else 'ies'} ran in {outcome.wall_s:.1f} s wall"
                  f"{resumed}; results and traces in {out}/",
                  highlight=False)
    if len(plan) > 1:
        console.print(f"{len(plan)} interleaved rounds (policy order reversed every other round; "
                      f"each round's files in {out / 'rounds'}/); paired deltas: mtpsim compare {out}",
                      highlight=False)
        if exp.workload.rounds != len(plan):
            console.print(f"each round served its share of the requests from an empty engine, its "
                          f"arrivals starting at t = 0; to simulate this workload: mtpsim simulate "
                          f"{setup.experiment} --set workload.rounds={len(plan)}",
                          highlight=False, soft_wrap=True)


def print_smoke(console: StdConsole, checks: list) -> None:
    """A --smoke run's checks, OK or FAIL each, and the note on what they show."""
    from mtpsim.vllm_runner import smoke as smoke_run

    for c in checks:
        console.print(f"[{'green' if c.ok else 'bold red'}]{'OK' if c.ok else 'FAIL':<4}[/] "
                      f"{c.policy:<6} {c.name}: {c.detail}", highlight=False, soft_wrap=True)
    console.print(smoke_run.NOTE, highlight=False)
