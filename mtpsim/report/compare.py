"""Rich tables of `mtpsim compare`: simulated against real per policy, and policy B against A
within one mode (deltas, confidence intervals, verdicts against the noise floor)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from mtpsim.report.fit import footnote_dashes
from mtpsim.report.numbers import number, signed, sized

if TYPE_CHECKING:
    from rich.console import Console

    from mtpsim.compare import ABReport, ABRow, FidelityRow
    from mtpsim.runs.compare import CompareRun, SweepPointAB


def fidelity_table(policy: str, rows: Sequence[FidelityRow], mape: float) -> Table:
    """Each metric real against simulated, with the error in % of real."""
    t = Table(title=f"sim vs real: {policy}  (MAPE {mape:.1f} %)", title_justify="left")
    for col in ("Metric", "Real", "Sim", "Error %"):
        t.add_column(col, justify="left" if col == "Metric" else "right")
    for r in rows:
        t.add_row(r.label, sized(r.real, r.key), sized(r.sim, r.key), f"{r.error_pct:+.1f}")
    return t


def _ci(r: ABRow) -> str:
    if not r.has_ci:
        return "-"
    unit = "%" if r.ci_pct else ""
    return f"[{sized(r.ci_low)}{unit}, {sized(r.ci_high)}{unit}]"


def _verdict(rep: ABReport, r: ABRow) -> str:
    if r.key == "pos0" and rep.noise_floor is not None:
        return "placebo: step 0 identical by design"
    noise = rep.within_noise(r)
    if r.verdict:
        floor = f"; within noise (±{sized(rep.noise_floor[r.key])})" if noise else ""  # type: ignore[index]
        return f"{r.verdict}{floor}"
    if noise:
        return f"within noise (±{sized(rep.noise_floor[r.key])})"  # type: ignore[index]
    return f"clears noise (±{sized(rep.noise_floor[r.key])})" if noise is False else ""  # type: ignore[index]


def ab_table(rep: ABReport, mode: str) -> Table:
    """Policy B against A in one mode: values, delta, 95 % CI, P(Δ>+R) and a verdict per metric."""
    title = f"{mode}: {rep.policy_b} vs {rep.policy_a}"
    if rep.num_requests:
        title += f" ({rep.num_requests[0]} / {rep.num_requests[1]} requests, 95% CI)"
    has_ci = any(r.has_ci for r in rep.rows)
    t = Table(title=title, title_justify="left", caption_justify="left")
    rounds = max((r.rounds for r in rep.rows), default=0)
    t.caption = ("Acceptance: request-level bootstrap CI. Timings: Student t over "
                 + (f"{rounds} paired interleaved rounds (Paired Δ %: the mean of the rounds' % "
                    "deltas, the CI's centre, whose sign may differ from Delta, the pooled runs' "
                    "difference; CI in % of A)" if rounds else
                    "paired interleaved rounds, which these results lack (run-real --rounds)")
                 + ". Verdicts against a region of practical equivalence (R): " + _rope_words(rep)
                 + "; P(Δ>+R) the probability the delta lies above it.")
    if not has_ci:
        t.caption = ("No 95% CI column: these results carry no per-request records or rounds (a vLLM "
                     "bench JSON or a transcribed table).")
    cols = ("Metric", rep.policy_a, rep.policy_b, "Delta", "Paired Δ %" if rounds else "Delta %",
            *(("95% CI", "P(Δ>+R)") if has_ci else ()), "Verdict")
    for col in cols:
        t.add_column(col, justify="left" if col in ("Metric", "Verdict") else "right")
    for r in rep.rows:
        rel = r.paired_mean_pct if r.rounds else r.rel_pct  # paired: the CI's own centre
        t.add_row(r.label, sized(r.a, r.key), sized(r.b, r.key), sized(r.delta, r.key), signed(rel, 2, "%"),
                  *((_ci(r), number(r.p_above, ".2f")) if has_ci else ()),
                  _verdict(rep, r))
    return footnote_dashes(t, "no CI for this metric: no per-request form or no paired rounds")


def _rope_words(rep: ABReport) -> str:
    r = rep.rope
    return (f"±{r.timing_pct:g} % timings, ±{r.acceptance_length:g} acceptance length, "
            f"±{r.acceptance_points:g} points acceptance rates")


def print_compare(console: Console, run: CompareRun) -> None:
    """Sim vs real per policy (with any workload mismatch), then each A/B with its placebo line."""
    from mtpsim.report.fit import print_table

    for fid in run.fidelity:
        if fid.unlike:
            console.print(f"[bold]not like with like[/bold] ({fid.policy}): {fid.unlike}", soft_wrap=True)
        print_table(console, fidelity_table(fid.policy, fid.rows, fid.mape))
    for mode, rep in run.ab:
        if rep.same_program_k is not None:
            console.print(f"{mode}: {rep.policy_b} and {rep.policy_a} are the same program at k = "
                          f"{rep.same_program_k} (no draft step reuses a row): not compared",
                          highlight=False)
            continue
        print_table(console, ab_table(rep, mode))
        if rep.noise_floor is not None:
            console.print(
                "  Placebo: draft step 0 is computed identically under both policies, so its "
                f"acceptance change (±{rep.noise_floor['pos0']:.2f} points) is run-to-run noise; "
                "acceptance deltas inside the scaled floor are not told apart from it.")


def print_sweep(console: Console, found: Sequence[SweepPointAB]) -> None:
    """Per sweep point and policy: the pooled A/B table and the delta's spread between repeats."""
    from mtpsim.report.fit import print_table

    for f in found:
        a, b = f.repeats
        print_table(console, ab_table(f.rep, f"{f.label} ({a}/{b} repeats pooled)"))
        for s in f.spread:
            unit = "%" if s.relative else ""
            each = ", ".join(f"{d:+.2f}{unit}" for d in s.deltas)
            console.print(f"  between repeats, {s.metric} delta: [{each}] mean "
                          f"{sized(s.mean)}{unit}, sd {sized(s.sd)}{unit}", highlight=False)
