"""`mtpsim simulate`: the experiment's benchmark table predicted for every policy. The run is
mtpsim.runs.simulate's, the report mtpsim.report.simulate's; this module parses and hands over."""

from __future__ import annotations

from pathlib import Path

from mtpsim.cliopts import Param, declared
from mtpsim.console import StdConsole

console = StdConsole()
err_console = StdConsole(stderr=True)


PARAMS = (
    Param("experiment", Path, "Experiment TOML, e.g. experiments/pr47352.toml."),
    Param("set_", str, "Override a spec field: section.key=value (repeatable), e.g. "
          "--set workload.num_prompts=64 --set speculative.num_speculative_tokens=2. "
          "A relative path (calibration.file) is from the current folder.",
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
          "records), e.g. --out runs/sim. A simulated result there of other settings is refused "
          "(one line naming what differs) unless --force; a real run's always.", ("--out",)),
    Param("force", bool, "With --out: replace simulated results of other settings in DIR.",
          ("--force",), False),
    Param("trace", Path, "Real-mode trace, one per --trace (repeat it: --trace DIR/fresh.trace.jsonl "
          "--trace DIR/share.trace.jsonl): fit acceptance, top-k overlap and step cost to it, report the "
          "fit, and simulate with it instead of the spec's models.", ("--trace",), multiple=True),
    Param("save_calibration", Path, "Write the --trace fit to this JSON file, for an experiment's "
          "\\[calibration] file = \"...\", e.g. --save-calibration runs/cal.json.",
          ("--save-calibration",)),
    Param("indexer_keys", str, "With --trace: how the fitted step cost counts the indexer's keys: "
          "'own' (each request's context, the default) or 'padded' (every decoding and drafting "
          "request at its batch's longest context, as the reference engine's batched indexer "
          "scores them). The calibration records it and prices simulated steps the same way. "
          "Off by default until a held-out test adopts it (docs/calibration.md). E.g. "
          "--indexer-keys padded.", ("--indexer-keys",), "own"),
    Param("plot", Path, "Write PNG plots to DIR: per-position acceptance per policy; with --trace, "
          "top-k overlap vs context per draft step. E.g. --plot runs/plots.", ("--plot",)),
    Param("bootstrap", int, "With --trace: also fit B bootstrap refits (requests and step blocks "
          "resampled) into the calibration, for --uncertainty on experiments that use it, "
          "e.g. --bootstrap 32.", ("--bootstrap",), 0, min=0),
    Param("uncertainty", int, "Draw N parameter sets from the spec's \\[uncertainty] priors "
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
    force: bool = False,
    trace: list[Path] | None = None,
    save_calibration: Path | None = None,
    indexer_keys: str = "own",
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
    from mtpsim.report.simulate import policy_bars, print_run, run_json
    from mtpsim.runs import simulate as runs
    from mtpsim.spec.paths import command_line_sets

    runs.check_flags(trace=trace or [], plot=plot, expected=expected, bootstrap=bootstrap,
                     save_calibration=save_calibration, uncertainty=uncertainty, metrics=metrics,
                     indexer_keys=indexer_keys)
    sets = command_line_sets(experiment, set_ or [])  # a relative path: from the current folder
    if uncertainty is not None:
        from mtpsim.uncertainty.cli import simulate_uncertainty

        simulate_uncertainty(str(experiment), runs.overrides(sets, policy or [], seed),
                             uncertainty, jobs, as_json, out, metrics)
        return
    runs.check_outputs(out, plot, save_calibration)
    if force and out is None:
        from mtpsim.errors import UserError

        raise UserError(None, "--force", "expected with --out (it replaces simulated results "
                        "of other settings there)")
    if out is not None:
        runs.refuse_other_settings(out, str(experiment), runs.overrides(sets, policy or [], seed,
                                                                        expected), force)
    # the fit is written once the run it feeds has passed every check of the flags and the spec
    calibration = runs.fit(trace, bootstrap, None, indexer_keys=indexer_keys) if trace else None
    # printed tables read metrics only; per-request records (and the spec's copy) are built
    # where a file, --json or a plot carries them
    records = as_json or out is not None or plot is not None
    with policy_bars(err_console, enabled=not as_json and err_console.is_terminal) as bars:
        run = runs.simulate(str(experiment), sets, policy or [], seed, expected, calibration,
                            progress=bars, records=records)
    if calibration is not None and save_calibration is not None:
        calibration.write(save_calibration)
    written = run.write(out) if out is not None else []
    if as_json:
        from mtpsim.fileio import dumps

        print(dumps(run_json(run), indent=2), flush=True)
        for line in [*run.notes, *run.warnings]:
            err_console.print(line, highlight=False, markup=False, soft_wrap=True)
        if plot is not None:  # written as without --json; stdout stays one JSON document
            from mtpsim.report.plots import simulate_plots

            simulate_plots(run.results, plot, list(trace or []))
        return
    print_run(console, run, plot=plot, trace=trace or [], save_calibration=save_calibration,
              written=written)
    for line in run.warnings:  # after "simulated N s of serving", the figure it qualifies
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)
