"""`mtpsim run-real`: run the experiment's workload for real, once per policy -> Result + Trace."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mtpsim.console import StdConsole
from mtpsim.errors import UserError
from mtpsim.fileio import output_dir
from mtpsim.real.backend import ENGINES

if TYPE_CHECKING:  # numpy-free at import, so `mtpsim --help` starts fast
    from mtpsim.result import Result
    from mtpsim.spec import Experiment

console = StdConsole()
err_console = StdConsole(stderr=True)

DEFAULT_ENGINE = "reference"  # --engine's default (mtpsim.real.ENGINES lists them all)


def _resume(experiment: Path, engine: str, out: Path, sets: list[str] | None, policies: list[str] | None,
            seed: int | None, server: bool, trace: bool, bench_client: str,
            rounds: int | None = None) -> list[str]:
    """The command that resumes this run: the same options (finished policies are skipped)."""
    from mtpsim.report.interrupt import resume_argv

    opts = ["--engine", engine] if engine != DEFAULT_ENGINE else []
    opts += [x for s in sets or [] for x in ("--set", s)]
    opts += [x for p in policies or [] for x in ("-p", p)]
    opts += ["--seed", str(seed)] if seed is not None else []
    opts += ["--server"] * server + ["--trace"] * trace
    opts += ["--bench-client", bench_client] if bench_client != "mtpsim" else []
    opts += ["--rounds", str(rounds)] if rounds is not None else []
    return resume_argv("run-real", str(experiment), str(out), opts)


def _interrupted(policies: tuple[str, ...], results: dict[str, Result], progress: dict[str, int],
                 num_prompts: int, out: Path, resume: list[str],
                 done_rounds: dict[str, list[Path]] | None = None, n_rounds: int = 1) -> str:
    from mtpsim.report.interrupt import interrupted_line

    if n_rounds > 1:  # a round on disk is kept; a policy is complete once all its rounds are
        done_rounds = done_rounds or {}
        kept = [f"{p} ({out / f'{p}.json'})" if p in results else
                f"{p} rounds {len(done_rounds[p])}/{n_rounds} ({out / 'rounds'})"
                for p in policies if p in results or done_rounds.get(p)]
        lost = [f"{p} (round in progress, {progress[p]} requests done; a round's result is written "
                "only once it completes)" if p in progress else f"{p} (rest not started)"
                for p in policies if p not in results]
        return interrupted_line(kept, lost, resume)
    kept = [f"{p} ({out / f'{p}.json'})" for p in policies if p in results]
    lost = [f"{p} (in progress, {progress[p]}/{num_prompts} requests done; a policy's result is "
            "written only once it completes)" if p in progress else f"{p} (not started)"
            for p in policies if p not in results]
    return interrupted_line(kept, lost, resume)


def refuse_plain_decoding(exp: Experiment, command: str) -> None:
    """Real runs measure MTP: plain decoding (k = 0) is simulated only, so far."""
    if exp.k == 0:
        raise UserError(exp.source, "speculative.num_speculative_tokens",
                        f"expected >= 1 for {command} (its engines run MTP; k = 0, plain "
                        "decoding, is simulated only: mtpsim simulate / sweep / advise)")


MAX_ARRIVAL_SPAN_S = 86_400.0  # a real run's requests arrive within a day of wall clock


def _check_wall_clock(exp: Experiment) -> None:
    """A real run waits for each arrival: a rate whose requests span more than a day (1e-9/s)
    would sit idle, not measure anything."""
    w = exp.workload
    span = w.num_prompts / w.request_rate
    if span > MAX_ARRIVAL_SPAN_S:
        raise UserError(exp.source, "workload.request_rate", f"expected arrivals within "
                        f"{MAX_ARRIVAL_SPAN_S:,.0f} s of wall clock on a real run "
                        f"({w.num_prompts} requests at {w.request_rate:g}/s span {span:.3g} s)")


def run_real(
    experiment: Annotated[Path, typer.Argument(help="Experiment TOML, e.g. experiments/reference-cpu.toml.")],
    engine: Annotated[str, typer.Option(help=f"Real engine: {', '.join(ENGINES)}.")] = DEFAULT_ENGINE,
    out: Annotated[Path | None, typer.Option(
        help="Folder for DIR/<policy>.json results and DIR/<policy>.trace.jsonl traces "
        "(default: runs/<experiment>-<engine>). Policies with a result there are skipped.")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a spec field: section.key=value (repeatable), e.g. "
        "--set workload.num_prompts=8 --set reference.threads=1.")] = None,
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
        "at most 8. Each round is a burst of its own: simulate with --set workload.rounds=R.")] = None,
    probe_on: Annotated[bool, typer.Option(
        "--probe/--no-probe", help="Time the fixed machine-speed probe (a few seconds, one "
        "thread) before and after every policy's round; recorded in the results.")] = True,
) -> None:
    """Run the experiment's workload on a real engine for each policy and write a result in the
    same schema as [cyan]mtpsim simulate[/cyan] (with per-request records) plus a trace.

    The reference engine is a small DSA + MTP model (trained weights shipped with mtpsim) with
    vLLM MRV2's speculative decoding, on the CPU or a CUDA GPU ([cyan]\\[reference][/cyan] section).
    Precedence: flag > --set > experiment file > preset > default.
    Example: [cyan]mtpsim run-real experiments/reference-cpu.toml --out runs/ref-cpu[/cyan]
    """
    from mtpsim.extras import require_engine
    from mtpsim.real import backend
    from mtpsim.spec import load_experiment

    real = backend(engine, server)  # an unknown engine, or --server where it always serves: one line
    caps = real.caps

    require_engine(engine, server)
    overrides = list(set_ or [])
    if policy:
        from mtpsim.policies import policy_flag

        overrides.append("policies=" + json.dumps(policy_flag(policy)))
    if seed is not None:
        overrides.append(f"seed={seed}")
    suffix = "-server" if server else "-smoke" if smoke else ""
    out = out if out is not None else Path("runs") / f"{experiment.stem}-{engine}{suffix}"
    if smoke:
        if not caps.smoke:
            raise UserError(None, "--smoke", "applies to --engine vllm")  # the one with a smoke model
        from mtpsim.vllm_runner import smoke as smoke_run

        trace, force = True, True  # the checks need this run's traces
        overrides = [*smoke_run.overrides((out / "smoke-model").absolute()), *overrides]
    exp = load_experiment(str(experiment), overrides)
    _check_wall_clock(exp)
    refuse_plain_decoding(exp, "run-real")
    real.refuse(exp, exp.policies)  # before any server starts, not an hour in
    served = caps.served
    if not served and (trace or bench_client != "mtpsim"):
        raise UserError(None, "--trace" if trace else "--bench-client",
                        "applies to --engine vllm or --server runs")
    output_dir(out, "--out")  # before the run: a finished run must have somewhere to go
    from mtpsim.real import run as real_run

    mode = caps.mode
    weights_sha = real_run.weights_sha_of(exp) if caps.weights_by_content else None
    plan = real_run.round_plan(exp, rounds, not caps.rounds, source=experiment)
    kept = {} if force else {name: prev for name in exp.policies if (prev := real_run.finished(
        out / f"{name}.json", mode, name, exp, served, weights_sha, len(plan)))}
    runner = real.runner(out, trace, bench_client, smoke=smoke)
    if smoke:
        smoke_run.prepare_model((out / "smoke-model").absolute())

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    state = real_run.RealRun(exp, out, plan)
    t0 = time.perf_counter()
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err_console.current(), transient=True) as bar:

            def start(name: str, label: str, total: int) -> Callable[[int, int], None]:
                task = bar.add_task(f"{engine}: {label}", total=total)
                return lambda done, _n: bar.update(task, completed=done)

            real_run.run_policies(
                state, runner, mode=mode, served=served, weights_sha=weights_sha, kept=kept,
                force=force, probe=real_run.Probe(enabled=probe_on and caps.probe), start=start,
                say=lambda line: err_console.print(line, highlight=False))
    except KeyboardInterrupt:
        err_console.print(_interrupted(exp.policies, state.results, state.progress,
                                       exp.workload.num_prompts, out,
                                       _resume(experiment, engine, out, set_, policy, seed, server, trace,
                                               bench_client, rounds), state.done_rounds, len(plan)),
                          highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    wall = time.perf_counter() - t0
    results, traces = state.results, state.traces

    from mtpsim.report.fit import print_table
    from mtpsim.report.tables import phase_table, pr_table, summary_lines
    from mtpsim.report.titles import setup_title

    print_table(console, pr_table(results, title=setup_title(exp, engine, own_model=caps.own_model)))
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
    ran = [p for p in results if p not in kept]
    resumed = f" ({len(results) - len(ran)} kept from an earlier run)" if len(ran) < len(results) else ""
    console.print(f"{len(ran)} polic{'y' if len(ran) == 1 else 'ies'} ran in {wall:.1f} s wall"
                  f"{resumed}; results and traces in {out}/",
                  highlight=False)
    if len(plan) > 1:
        console.print(f"{len(plan)} interleaved rounds (policy order reversed every other round; "
                      f"each round's files in {out / 'rounds'}/); paired deltas: mtpsim compare {out}",
                      highlight=False)
        if exp.workload.rounds != len(plan):
            console.print(f"each round served its requests as a burst of its own; to simulate this "
                          f"workload: mtpsim simulate {experiment} --set workload.rounds={len(plan)}",
                          highlight=False, soft_wrap=True)
    if smoke:
        _smoke_report(results, traces, exp.k, out)


def _smoke_report(results: dict[str, Result], traces: dict, k: int, out: Path) -> None:
    from mtpsim.vllm_runner import smoke as smoke_run

    checks = [c for name, res in results.items()
              for c in smoke_run.check_policy(name, res, traces[name], k)]
    for c in checks:
        console.print(f"[{'green' if c.ok else 'bold red'}]{'OK' if c.ok else 'FAIL':<4}[/] "
                      f"{c.policy:<6} {c.name}: {c.detail}", highlight=False, soft_wrap=True)
    console.print(smoke_run.NOTE, highlight=False)
    smoke_run.write_report(checks, out / "smoke.json")
    if not all(c.ok for c in checks):
        raise typer.Exit(1)
