"""`mtpsim simulate`: the experiment's benchmark table predicted for every policy."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim.cliopts import Param, declared
from mtpsim.console import StdConsole
from mtpsim.fileio import dumps

if TYPE_CHECKING:  # numpy-free at import, so `mtpsim --help` starts fast
    from mtpsim.calibration import Calibration
    from mtpsim.result import Result
    from mtpsim.spec import Experiment

console = StdConsole()
err_console = StdConsole(stderr=True)


def run_policies(exp_path: str, overrides: list[str], show_progress: bool,
                 calibration: Calibration | None = None) -> tuple[Experiment, dict[str, Result]]:
    """Load the experiment and simulate each of its policies (with a progress bar if asked);
    `calibration` (fitted from traces) replaces the spec's acceptance and cost models."""
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    exp = load_experiment(exp_path, overrides)
    results: dict[str, Result] = {}
    if not show_progress:
        for policy in exp.policies:
            results[policy] = simulate(exp, policy, calibration=calibration)
        return exp, results
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=err_console.current(), transient=True) as bar:
        for policy in exp.policies:
            task = bar.add_task(f"simulating {policy}", total=exp.workload.num_prompts)
            results[policy] = simulate(
                exp, policy, progress=lambda done, _n, task=task: bar.update(task, completed=done),
                calibration=calibration)
    return exp, results


def _fit_what_the_traces_hold(cal: Calibration, path: str, overrides: list[str],
                              chosen: bool) -> tuple[Calibration, list[str], list[str]]:
    """Traces of a subset of the spec's policies: the others take their overlap from the spec
    (said in a note), and those only their own traces can fit are left out (said too), or
    refused when the user chose them with --policy."""
    from mtpsim.calibration.partial import fill_from_spec
    from mtpsim.errors import UserError
    from mtpsim.spec import load_experiment

    exp = load_experiment(path, overrides)
    cal, notes, left_out = fill_from_spec(cal, exp)
    if left_out:
        if chosen or len(left_out) == len(exp.policies):
            raise UserError(None, "--trace", f"expected a trace of each policy to simulate: "
                            f"{'; '.join(left_out)}")
        kept = [p for p in exp.policies if not any(x.startswith(f"{p} (") for x in left_out)]
        notes.append(f"left out: {'; '.join(left_out)}")
        overrides = [*overrides, "policies=" + json.dumps(kept)]
    return cal, notes, overrides


PARAMS = (
    Param("experiment", Path, "Experiment TOML, e.g. experiments/pr47352.toml."),
    Param("set_", str, "Override a spec field: section.key=value (repeatable), e.g. "
          "--set workload.num_prompts=64 --set speculative.num_speculative_tokens=2.",
          ("--set",), multiple=True),
    Param("policy", str, "Simulate only these policies (repeatable; default: the spec's), "
          "e.g. -p fresh -p share.", ("--policy", "-p"), multiple=True),
    Param("seed", int, "Seed of the workload and acceptance draws (default: the spec's), e.g. "
          "--seed 3.", ("--seed",)),
    Param("expected", bool, "Expected-value acceptance instead of seeded draws (no sampling "
          "noise), e.g. to see a policy's mean effect on a small workload.", ("--expected",), False),
    Param("as_json", bool, "Print machine-readable JSON instead of tables (results without "
          "per-request records), e.g. --json > sim.json.", ("--json",), False),
    Param("out", Path, "Write one result per policy to DIR/<policy>.json (with per-request "
          "records), e.g. --out runs/sim.", ("--out",)),
    Param("trace", Path, "Real-mode trace (repeatable, e.g. DIR/fresh.trace.jsonl "
          "DIR/share.trace.jsonl): fit acceptance, top-k overlap and step cost to it, report the "
          "fit, and simulate with it instead of the spec's models.", ("--trace",), multiple=True),
    Param("save_calibration", Path, "Write the --trace fit to this JSON file, for an experiment's "
          "\\[calibration] file = \"...\", e.g. --save-calibration runs/cal.json.",
          ("--save-calibration",)),
    Param("plot", Path, "Write PNG plots to DIR: per-position acceptance per policy; with --trace, "
          "top-k overlap vs context per draft step. E.g. --plot runs/plots.", ("--plot",)),
    Param("bootstrap", int, "With --trace: also fit B bootstrap refits (requests and step blocks "
          "resampled) into the calibration, for --uncertainty on experiments that use it, "
          "e.g. --bootstrap 32.", ("--bootstrap",), 0, min=0),
    Param("uncertainty", int, "Draw N parameter sets from the spec's [uncertainty] priors "
          "(quasi-random), run every policy on each, and print medians, intervals, P(delta > 0), "
          "what the measured rows narrowed, the sensitivity table and what to measure next; "
          "--json/--out carry the draws. E.g. --uncertainty 64.", ("--uncertainty",)),
    Param("jobs", int, "With --uncertainty: worker processes (default: the usable cores), e.g. "
          "-j 1.", ("--jobs", "-j"), min=1),
    Param("metrics", str, "With --uncertainty: the figures tabled: 'default' (throughput, median "
          "TPOT, median and P90 TTFT, acceptance length), 'all' (mean, median, P90, P99 of TTFT, "
          "TPOT, ITL, E2EL and the three throughputs, as `vllm bench serve` prints them) or key "
          "names, e.g. --metrics mean_ttft_ms,p99_tpot_ms. --json/--out always carry all of them.",
          ("--metrics",)),
)


@declared(*PARAMS)
def simulate(
    experiment: Path,
    set_: list[str] | None = None,
    policy: list[str] | None = None,
    seed: int | None = None,
    expected: bool = False,
    as_json: bool = False,
    out: Path | None = None,
    trace: list[Path] | None = None,
    save_calibration: Path | None = None,
    plot: Path | None = None,
    bootstrap: int = 0,
    uncertainty: int | None = None,
    jobs: int | None = None,
    metrics: str | None = None,
) -> None:
    """Simulate each policy of an experiment and print the upstream PR's benchmark table.

    The table has one column per policy and deltas against the first; then come the step time
    per phase and, where the spec holds measured rows, simulated vs measured.

    Precedence: flag > --set > experiment file > preset > default.
    Example: [cyan]mtpsim simulate experiments/pr47352.toml --set workload.num_prompts=64[/cyan]
    """
    from mtpsim.errors import UserError
    from mtpsim.fileio import output_dir, output_file
    from mtpsim.policies import policy_flag
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
    from mtpsim.spec.roles import setup_overrides

    calibration = None
    if plot is not None:
        from mtpsim.extras import require

        require("--plot", "plots")
    if metrics is not None and uncertainty is None:
        raise UserError(None, "--metrics", "expected with --uncertainty (a plain simulate prints "
                        "every figure in its table and --json)")
    if uncertainty is not None:
        from mtpsim.uncertainty.cli import simulate_uncertainty

        if trace or plot is not None or expected:
            raise UserError(None, "--uncertainty", "expected without --trace, --plot and --expected")
        overrides = list(set_ or []) + (["policies=" + json.dumps(policy_flag(policy))] if policy else []) + (
            [f"seed={seed}"] if seed is not None else [])
        simulate_uncertainty(str(experiment), overrides, uncertainty, jobs, as_json, out, metrics)
        return
    if bootstrap and not trace:
        raise UserError(None, "--bootstrap", "expected --trace files to refit")
    if save_calibration is not None and not trace:
        raise UserError(None, "--save-calibration", "expected --trace files to fit")
    for folder, flag in ((out, "--out"), (plot, "--plot")):
        if folder is not None:
            output_dir(folder, flag)
    if save_calibration is not None:
        output_file(save_calibration, "--save-calibration")
    if trace:
        from mtpsim.calibration.traces import fit_from_traces
        from mtpsim.report.calibration import fit_tables

        calibration = fit_from_traces(trace)
        if bootstrap:
            from mtpsim.trace import read_trace
            from mtpsim.uncertainty.bootstrap import with_bootstrap

            calibration = with_bootstrap(calibration, [read_trace(p) for p in trace], bootstrap)
        if save_calibration is not None:
            calibration.write(save_calibration)

    overrides = list(set_ or [])
    if policy:
        overrides.append("policies=" + json.dumps(policy_flag(policy)))
    if seed is not None:
        overrides.append(f"seed={seed}")
    if expected:
        overrides.append('acceptance.mode="expected"')
    notes: list[str] = []
    if calibration is not None:
        calibration, notes, overrides = _fit_what_the_traces_hold(calibration, str(experiment),
                                                                   overrides, bool(policy))
    t0 = time.perf_counter()
    exp, results = run_policies(str(experiment), overrides,
                                show_progress=not as_json and err_console.is_terminal,
                                calibration=calibration)
    wall = time.perf_counter() - t0
    if out is not None:
        for name, res in results.items():
            res.write(out / f"{name}.json")
    if as_json:
        payload = {name: {k: v for k, v in res.to_json().items() if k != "requests"}
                   for name, res in results.items()}
        extra = {} if calibration is None else {"calibration": calibration.to_json()}
        print(dumps({"experiment": str(experiment), "wall_s": wall, "results": payload, **extra},
                    indent=2), flush=True)
        for line in notes:
            err_console.print(line, highlight=False, markup=False, soft_wrap=True)
        return
    if calibration is not None:
        for table in fit_tables(calibration):
            print_table(console, table)
        if save_calibration is not None:
            console.print(f"calibration written to {save_calibration}", highlight=False)
    for line in notes:
        console.print(line, highlight=False, markup=False)
    from mtpsim.report.headline import headline

    for line in headline(exp, results, overridden=bool(set_ or policy or seed is not None or expected
                                                       or calibration is not None)):
        console.print(line, highlight=False, markup=False)
    print_table(console, pr_table(results, title=setup_title(exp, "simulated")))
    for line in summary_lines(results):
        console.print(line, highlight=False)
    print_table(console, phase_table(results))
    if calibration is None and not exp.calibration.file:  # a trace fit prices steps otherwise
        print_table(console, prefill_table(exp, exp.policies[0]))
    console.print(acceptance_terminal(results))
    if plot is not None:
        from mtpsim.report.plots import simulate_plots

        for p in simulate_plots(results, plot, trace or []):
            console.print(f"plot: {p}", highlight=False)
    cal = exp.calibration
    changed = setup_overrides(set_ or [])
    if changed and cal.measured:
        console.print("measured rows not shown: --set changed the measured setup "
                      f"({', '.join(changed)})", highlight=False)
    elif any(p in cal.measured for p in results):
        print_table(console, measured_table(results, cal.measured, cal.fit_metrics, cal.fit_policy),
                    group=3)
        if cal.measured_source:
            console.print(f"measured: {cal.measured_source}", highlight=False)
    for line in kv_lines(results):
        console.print(line, highlight=False)
    sim_s = sum(float(r.get("duration")) for r in results.values())
    console.print(f"simulated {sim_s:.1f} s of serving in {wall:.2f} s wall "
                  f"({sim_s / wall:,.0f}x real time)", highlight=False)
    if out is not None:
        console.print(f"wrote {', '.join(str(out / f'{n}.json') for n in results)}",
                      highlight=False)
