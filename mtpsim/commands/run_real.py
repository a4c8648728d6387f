"""`mtpsim run-real`: run the experiment's workload for real, once per policy -> Result + Trace. The
run is mtpsim.runs.real's, the report mtpsim.report.real's; this module parses and hands over."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mtpsim.console import StdConsole
from mtpsim.real.backend import ENGINES
from mtpsim.runs.real import DEFAULT_ENGINE

if TYPE_CHECKING:
    from mtpsim.real.run import RealRun

console = StdConsole()
err_console = StdConsole(stderr=True)

def run_real(
    experiment: Annotated[Path, typer.Argument(help="Experiment TOML, e.g. experiments/reference-cpu.toml.")],
    engine: Annotated[str, typer.Option(help=f"Real engine: {', '.join(ENGINES)}.")] = DEFAULT_ENGINE,
    out: Annotated[Path | None, typer.Option(
        help="Folder for DIR/<policy>.json results and DIR/<policy>.trace.jsonl traces "
        "(default: runs/<experiment>-<engine>). Policies with a result there are skipped.")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a spec field: section.key=value (repeatable), e.g. "
        "--set workload.num_prompts=8 --set reference.threads=1. "
        "A relative path (calibration.file) is from the current folder.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Run only these policies (repeatable; default: the spec's).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed (default: the spec's).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rerun finished policies.")] = False,
    server: Annotated[bool, typer.Option(
        "--server", help="Reference engine behind `mtpsim serve-reference`, measured by the "
        "benchmark client over HTTP, exactly as --engine vllm runs.")] = False,
    trace: Annotated[bool, typer.Option(
        "--trace", help="vLLM: eager mode; the plugin records top-k overlap (fresh top-k "
        "computed in shadow) and acceptance per draft step. Perturbs timing.")] = False,
    bench_client: Annotated[str, typer.Option(
        help="vLLM: 'mtpsim' (built-in client) or 'vllm' (`vllm bench serve`, its JSON "
        "imported).")] = "mtpsim",
    smoke: Annotated[bool, typer.Option(
        "--smoke", help="vLLM: first contact with a GPU node, no download: a shrunken "
        "DeepSeek-V3.2 shipped with mtpsim, random weights (--load-format dummy), 1 GPU, 8 "
        "requests per policy, trace mode; checks the plugin engaged, indexer calls per draft "
        "step (k under fresh, 1 under share), compaction, complete traces and counters that "
        "agree. Writes DIR/smoke.json; exit 1 if a check fails.")] = False,
    rounds: Annotated[int | None, typer.Option(
        help="Reference engine: split the requests into R rounds and run every policy in each, "
        "in A B / B A order, so machine drift cancels in paired deltas (DIR/rounds/rNN/). "
        "Default: the spec's workload.rounds, else as many rounds as give each a full batch, "
        "at most 8. Each round starts from an empty engine at t = 0: simulate with --set "
        "workload.rounds=R.")] = None,
    probe_on: Annotated[bool, typer.Option(
        "--probe/--no-probe", help="Time the fixed machine-speed probe (a few seconds, one "
        "thread) before and after every policy's round, and on the in-process reference engine "
        "its level probe (one fixed decode step, timed inside each round); recorded in the results.")] = True,
    level_every: Annotated[int, typer.Option(
        min=0, help="Reference engine: read the level probe densely, one timed step every N engine "
        "steps, the run's level their trimmed mean weighted by the engine time each stands for "
        "(docs/uncertainty.md §17). 0: a reading every 128 steps and at the ends, the median.")] = 0,
) -> None:
    """Run the experiment's workload on a real engine for each policy and write a result in the
    same schema as [cyan]mtpsim simulate[/cyan] (with per-request records) plus a trace.

    The reference engine is a small DSA + MTP model (trained weights shipped with mtpsim) with
    vLLM MRV2's speculative decoding, on the CPU or a CUDA GPU ([cyan]\\[reference][/cyan] section).
    Precedence: flag > --set > experiment file > preset > default.
    Example: [cyan]mtpsim run-real experiments/reference-cpu.toml --out runs/ref-cpu[/cyan]
    """
    from mtpsim.report import real as report
    from mtpsim.runs import real as runs

    setup = runs.prepare(experiment, engine, out=out, sets=list(set_ or []), policy=list(policy or []),
                         seed=seed, server=server, trace=trace, bench_client=bench_client,
                         smoke=smoke, force=force, rounds=rounds)

    def interrupted(state: RealRun) -> typer.Exit:
        resume = report.resume(experiment, engine, setup.out, set_, policy, seed, server, trace,
                               bench_client, rounds, level_every, probe_on)
        err_console.print(report.interrupted(state, setup.out, resume), highlight=False, markup=False,
                          soft_wrap=True)
        return typer.Exit(130)

    outcome = runs.run(setup, bench_client, probe_on, lambda: report.policy_bars(err_console, engine),
                       lambda line: err_console.print(line, highlight=False), interrupted, level_every)
    report.print_run(console, outcome)
    if smoke:
        checks = list(runs.smoke_checks(outcome))
        report.print_smoke(console, checks)
        runs.write_smoke(checks, setup.out)
        if not all(c.ok for c in checks):
            raise typer.Exit(1)
