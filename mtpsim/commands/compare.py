"""`mtpsim compare`: sim vs real per policy, and policy A/B within each mode."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mtpsim.console import StdConsole
from mtpsim.errors import UserError
from mtpsim.fileio import dumps
from mtpsim.report.numbers import sized

if TYPE_CHECKING:  # numpy-free at import, so `mtpsim --help` starts fast
    from mtpsim.result import Result

console = StdConsole()


def _load_inputs(inputs: list[str]) -> list[Result]:
    """`[POLICY=]PATH` where PATH is a result file or a folder of `*.json` results."""
    from mtpsim.result import load_result

    out: list[Result] = []
    for item in inputs:
        label, sep, raw = item.partition("=")
        if not sep:
            label, raw = "", item
        path = Path(raw)
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        if path.is_dir() and not files:
            raise UserError(path, None, "expected a folder holding result files (*.json)")
        for f in files:
            res = load_result(f)
            if label:
                res.policy = label
            elif res.policy is None:
                res.policy = f.stem
            out.append(res)
    return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


MAX_BOOT = 100_000  # bootstrap replicates: CIs stop moving long before; more only costs memory


def _check_flags(baseline: str, num_boot: int, seed: int) -> None:
    """The flags' meaning, before any file is read."""
    from mtpsim.errors import UserError
    from mtpsim.policies import NO_MTP, POLICIES

    if baseline not in (*POLICIES, NO_MTP):
        raise UserError(None, "--baseline", f"expected a policy ({', '.join([*POLICIES, NO_MTP])}), "
                        f"got {baseline!r}")
    if not 100 <= num_boot <= MAX_BOOT:
        raise UserError(None, "--num-boot", f"expected 100..{MAX_BOOT:,} replicates, got {num_boot:,}")
    if not 0 <= seed < 2**63:
        raise UserError(None, "--seed", f"expected an integer in 0..2**63-1, got {seed}")


def compare(
    inputs: Annotated[list[str], typer.Argument(
        help="Results to compare: `[POLICY=]PATH`, PATH an mtpsim result, a `vllm bench serve "
        "--save-result` JSON, or a folder of them (e.g. an `--out` folder). POLICY labels a file "
        "that does not name its policy (vLLM bench JSON).")],
    baseline: Annotated[str, typer.Option(help="Policy the A/B deltas are taken against.")] = "fresh",
    num_boot: Annotated[int, typer.Option(min=100, help="Bootstrap replicates for the CIs.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON only.")] = False,
    plot: Annotated[Path | None, typer.Option(
        help="Write PNG plots to DIR: sim vs real scatter, per-position acceptance per mode.")] = None,
    rope_timing: Annotated[float, typer.Option(
        min=0.0, help="Region of practical equivalence for timing deltas, ± % of the baseline.")] = 0.5,
    rope_acceptance: Annotated[float, typer.Option(
        min=0.0, help="Region of practical equivalence for acceptance length deltas, ±.")] = 0.01,
    normalise: Annotated[bool, typer.Option(
        "--normalise", help="Put each round's timings in units of the machine-speed probe taken "
        "around it before pairing (mtpsim.probe).")] = False,
) -> None:
    """Compare results: [b]sim vs real[/b] for every policy found in both modes (error % per
    metric and the mean absolute percentage error), and a [b]policy A/B[/b] within each mode:
    acceptance deltas with a 95 % request-level bootstrap CI, timing deltas from the paired
    per-round differences of interleaved rounds (run-real --rounds; drift cancels), each judged
    against a region of practical equivalence ("better", "worse", "no practical difference",
    "cannot tell"); and the placebo noise floor (position-0 acceptance cannot differ between
    fresh, share and share_recent, so its difference is noise).

    Example: [cyan]mtpsim compare runs/sim runs/real[/cyan] ·
    [cyan]mtpsim compare fresh=off.json share=on.json[/cyan]
    """
    from mtpsim.compare import ab_compare, fidelity, mean_abs_pct_error, workload_mismatch
    from mtpsim.compare_sweep import is_sweep
    from mtpsim.report.compare import ab_table, fidelity_table
    from mtpsim.report.fit import print_table
    from mtpsim.verdict import Rope

    rope = Rope(timing_pct=rope_timing, acceptance_length=rope_acceptance)
    _check_flags(baseline, num_boot, seed)

    if plot is not None:
        from mtpsim.extras import require
        from mtpsim.fileio import output_dir

        require("--plot", "plots")

        output_dir(plot, "--plot")  # before any work
    if len(inputs) == 1 and is_sweep(Path(inputs[0])):
        _compare_sweep(Path(inputs[0]), baseline, num_boot, seed, as_json)
        return
    results = _load_inputs(inputs)
    by_mode: dict[str, dict[str, Result]] = {}
    for res in results:
        mode = "sim" if res.mode == "simulate" else "real"
        by_mode.setdefault(mode, {})[res.policy or "?"] = res
    out: dict[str, object] = {"fidelity": {}, "ab": {}}
    sim, real = by_mode.get("sim", {}), by_mode.get("real", {})
    for policy in [p for p in real if p in sim]:
        rows = fidelity(real[policy], sim[policy])
        mape = mean_abs_pct_error(rows)
        unlike = workload_mismatch(real[policy], sim[policy])
        out["fidelity"][policy] = {"mape_pct": mape, "workload_mismatch": unlike, "rows": [  # type: ignore[index]
            {"metric": r.key, "real": r.real, "sim": r.sim, "error_pct": r.error_pct} for r in rows]}
        if unlike and not as_json:
            console.print(f"[bold]not like with like[/bold] ({policy}): {unlike}", soft_wrap=True)
        if not as_json:
            print_table(console, fidelity_table(policy, rows, mape))
    held = sorted({p for pols in by_mode.values() for p in pols})
    if any(len(p) > 1 for p in by_mode.values()) and not any(baseline in p for p in by_mode.values()):
        # else the A/B table would silently vanish
        raise UserError(None, "--baseline", f"expected a policy the inputs hold ({', '.join(held)}), "
                        f"got {baseline!r}")
    for mode, pols in by_mode.items():
        if baseline not in pols:
            continue
        for policy, res in pols.items():
            if policy == baseline:
                continue
            rep = ab_compare(pols[baseline], res, num_boot=num_boot, seed=seed, rope=rope,
                             normalise=normalise)
            if rep.same_program_k is not None:
                out["ab"][f"{mode}:{policy}"] = {"baseline": baseline, "policy": policy,  # type: ignore[index]
                                                 "same_program_at_k": rep.same_program_k}
                if not as_json:
                    console.print(f"{mode}: {policy} and {baseline} are the same program at k = "
                                  f"{rep.same_program_k} (no draft step reuses a row): not compared",
                                  highlight=False)
                continue
            out["ab"][f"{mode}:{policy}"] = {  # type: ignore[index]
                "baseline": baseline, "policy": policy, "noise_floor": rep.noise_floor,
                "num_requests": rep.num_requests, "normalised": normalise,
                "rope": {"timing_pct": rope.timing_pct, "acceptance_length": rope.acceptance_length,
                         "acceptance_points": rope.acceptance_points},
                "rows": [{"metric": r.key, "a": r.a, "b": r.b, "delta": r.delta, "rel_pct": r.rel_pct,
                          "ci": [r.ci_low, r.ci_high] if r.has_ci else None,
                          "ci_unit": "pct" if r.ci_pct else "metric", "rounds": r.rounds,
                          "paired_mean_pct": _finite(r.paired_mean_pct),
                          "verdict": r.verdict or None, "p_above_region": _finite(r.p_above),
                          "p_below_region": _finite(r.p_below),
                          "significant": r.significant, "within_noise": rep.within_noise(r)}
                         for r in rep.rows]}
            if not as_json:
                print_table(console, ab_table(rep, mode))
                if rep.noise_floor is not None:
                    console.print(
                        "  Placebo: draft step 0 is computed identically under both policies, so its "
                        f"acceptance change (±{rep.noise_floor['pos0']:.2f} points) is run-to-run noise; "
                        "acceptance deltas inside the scaled floor are not told apart from it.")
    if plot is not None:
        from mtpsim.report.plots import compare_plots

        paths = compare_plots({p: (real[p], sim[p]) for p in real if p in sim}, by_mode, plot)
        if not as_json:
            for p in paths:
                console.print(f"plot: {p}", highlight=False)
    if not out["fidelity"] and not out["ab"]:
        raise UserError(None, "inputs", f"nothing to compare: expected the same policy in a sim and a "
                        f"real result, or the baseline policy {baseline!r} and another in one mode "
                        f"(found {sorted((m, p) for m in by_mode for p in by_mode[m])})")
    if as_json:
        typer.echo(dumps(out, indent=2))


def _compare_sweep(path: Path, baseline: str, num_boot: int, seed: int, as_json: bool) -> None:
    """A real sweep's --out: per point, the A/B on the requests of all repeats pooled, and the
    A/B delta's spread between repeats."""
    from mtpsim.compare import ab_compare
    from mtpsim.compare_sweep import load_sweep, pooled, repeat_spread
    from mtpsim.report.compare import ab_table
    from mtpsim.report.fit import print_table

    out: dict[str, object] = {}
    for pt in load_sweep(path):
        label = ", ".join(f"{k}={v}" for k, v in pt.values.items()) or pt.point_id
        if baseline not in pt.runs:
            continue
        a_runs = pt.runs[baseline]
        for policy, b_runs in pt.runs.items():
            if policy == baseline:
                continue
            rep = ab_compare(pooled(list(a_runs.values())), pooled(list(b_runs.values())),
                             num_boot=num_boot, seed=seed)
            spread = repeat_spread(a_runs, b_runs)
            out[f"{pt.point_id}:{policy}"] = {
                "values": pt.values, "baseline": baseline, "policy": policy,
                "repeats": [len(a_runs), len(b_runs)], "num_requests": rep.num_requests,
                "rows": [{"metric": r.key, "a": r.a, "b": r.b, "delta": r.delta,
                          "ci": [r.ci_low, r.ci_high] if r.has_ci else None,
                          "significant": r.significant} for r in rep.rows],
                "between_repeats": [{"metric": s.metric, "relative": s.relative,
                                     "deltas": s.deltas, "mean": s.mean, "sd": s.sd}
                                    for s in spread]}
            if as_json:
                continue
            print_table(console, ab_table(rep, f"{label} ({len(a_runs)}/{len(b_runs)} repeats pooled)"))
            for s in spread:
                unit = "%" if s.relative else ""
                each = ", ".join(f"{d:+.2f}{unit}" for d in s.deltas)
                console.print(f"  between repeats, {s.metric} delta: [{each}] mean "
                              f"{sized(s.mean)}{unit}, sd {sized(s.sd)}{unit}", highlight=False)
    if not out:
        raise UserError(path, None, f"expected a real sweep with the baseline policy {baseline!r} "
                        "and another in some point")
    if as_json:
        typer.echo(dumps({"sweep": out}, indent=2))
