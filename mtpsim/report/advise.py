"""What `mtpsim advise` prints: the k x policy table with intervals (the gain over the best fresh
setting and over no MTP, share against fresh at the same k), the verdict lines (the
recommendation, what cannot be told and the measurement that would decide it), the Monte Carlo
line, the legend; or the advice as JSON. Rendering only: mtpsim.runs.advise made the advice."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from mtpsim.report.numbers import delta_interval, interval, signed_interval
from mtpsim.uncertainty.advise import below, quoted
from mtpsim.uncertainty.intervals import verdict
from mtpsim.verdict import MC_MARGIN

if TYPE_CHECKING:
    from mtpsim.console import StdConsole
    from mtpsim.runs.advise import AdviseRun


@contextlib.contextmanager
def cells_bar(console: StdConsole, enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar over the cells x draws while they run (gone when done); None if not
    `enabled`."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("advise"), BarColumn(), MofNCompleteColumn(), console=console.current(),
                  transient=True) as bar:
        task = bar.add_task("cells", total=None)
        yield lambda d, t: bar.update(task, completed=d, total=t)


def lines(run: AdviseRun) -> list[str]:
    """Every line printed under the table: the verdict, the Monte Carlo line, the legend."""
    return (verdict_lines(run.advice, run.prob, run.doubt) + [mc_line(run.advice, run.rows)]
            + legend(run.advice, run.prob, share=has_share(run.rows)))


def advise_json(deployment: Path, run: AdviseRun, said: list[str]) -> dict[str, Any]:
    """`--json`: the recommendation, the doubt, the verdict lines and every row."""
    adv, (k, p, iv), (bk, bp, biv, robust) = run.advice, run.recommendation, run.best_median
    return {
        "deployment": str(deployment), "draws": adv.n_draws, "wall_s": adv.wall_s,
        "sampler": sampler_json(adv, run.rows),
        "best_fresh_k": adv.best_fresh(),
        # what to deploy: the decision the verdict's "recommended:" line states
        "recommendation": {"k": k, "policy": p, "gain_pct": iv.to_json(),
                           "basis": ("the best fresh setting, the baseline of the gains"
                                     if (k, p) == (adv.best_fresh(), "fresh") else
                                     "a robust gain over the best fresh setting")},
        # the best median gain: the recommendation where robust, else what "cannot tell" is about
        "best_median": {"k": bk, "policy": bp, "gain_pct": biv.to_json(), "robust": robust},
        "cannot_tell": run.doubt, "verdict": said, "skipped": adv.skipped,
        "rows": [{kk: (v.to_json() if hasattr(v, "to_json") else v) for kk, v in r.items()}
                 for r in run.rows],
        "extrapolation": {f"k={c[0]} ctx={c[1]} conc={c[2]}": list(n)
                          for c, n in adv.notes.items() if n}}


def print_advice(console: StdConsole, run: AdviseRun, said: list[str],
                 plot: Path | None = None) -> None:
    """The table, cut to fit (k and policy repeat; a gain keeps its P, share vs fresh its P and
    verdict), the lines under it, and with `plot` the gain plot written there."""
    from mtpsim.report.fit import print_lines, print_table

    share = has_share(run.rows)  # a deployment of fresh alone has no share vs fresh columns
    print_table(console, advise_table(run.advice, run.rows, run.prob), keep=2,
                group=(1, 1, 2, 1, 4) if share else (1, 1, 2, 1))
    print_lines(console, said)
    if plot is not None:
        from mtpsim.report.plots import gain_plot

        console.print(f"plot: {gain_plot(run.advice, run.prob, plot / 'advise-gain.png')}",
                      highlight=False)


def has_share(rows: list[dict]) -> bool:
    """Whether any row compares share with fresh at its k (not for a deployment of fresh alone)."""
    return any(r.get("vs_fresh_same_k") is not None for r in rows)


def advise_table(adv: Any, rows: list[dict], prob: float) -> Table:
    """Per k and policy: throughput and TPOT with intervals, the gains and, where share runs,
    the same-k verdict."""
    d = adv.dep
    share = has_share(rows)
    # the deployment as simulated: gpu, tp and quantization have defaults a file may leave out
    t = Table(title=f"{d.description or d.source}: {d.model} on {d.tp} x {d.gpu} "
              f"({d.quantization}); mix of contexts {list(d.contexts)} "
              f"(weights {list(d.weights)}), concurrency {list(d.concurrency)}; median "
              f"[{round(100 * prob)} % interval] over {adv.n_draws:,} draws", title_justify="left",
              box=box.SIMPLE_HEAD)
    for col in ("k", "policy", "output tok/s", "median TPOT ms", "gain vs best fresh",
                "P(gain>0)", "gain vs no MTP",
                *(("share vs fresh, same k", "MC SE (eff.)", "P(>+R)", "verdict") if share else ())):
        t.add_column(col, justify="left" if col in ("policy", "verdict") else "right")
    for r in rows:
        thr, tpot, g = r["output_throughput"], r["median_tpot_ms"], r["gain_pct"]
        same = r.get("vs_fresh_same_k")
        t.add_row(str(r["k"]), r["policy"], interval(thr.median, thr.lo, thr.hi, ",.0f"),
                  interval(tpot.median, tpot.lo, tpot.hi, ".2f"),
                  *((delta_interval(g), f"{g.p_pos:.2f}")
                    if (r["k"], r["policy"]) != (adv.best_fresh(), "fresh") else ("baseline", "")),
                  delta_interval(r["gain_vs_no_mtp_pct"]) if "gain_vs_no_mtp_pct" in r else (
                      "baseline" if r["k"] == 0 else ""),
                  *(_same_k(same, r["k"]) if share else ()))
    return t


def _same_k(same: Any, k: int) -> tuple[str, str, str, str]:
    """share vs fresh at one k: the interval, its MC SE, P(>+R) and the verdict ('' for fresh)."""
    if same is None:
        return "", "", "", ""
    return (delta_interval(same), se_text(same), "" if k == 1 else f"{same.p_above:.2f}",
            verdict(same, "share", "fresh", "output_throughput", k, mc_margin=True))


def se_text(iv: Any) -> str:
    """An interval's MC SE and effective draws: "0.08 (3,100)"."""
    import math

    if math.isnan(iv.mc_se):
        return "-"
    eff = "-" if math.isnan(iv.eff_draws) or math.isinf(iv.eff_draws) else f"{iv.eff_draws:,.0f}"
    return f"{iv.mc_se:.2f} ({eff})"


def mc_line(adv: Any, rows: list[dict[str, Any]]) -> str:
    """How the draws were made, and whether every quoted delta end's MC SE met the target."""
    from mtpsim.uncertainty.advise import INNER, missed

    reps = 0 if adv.replicate is None or not len(adv.replicate) else len(set(adv.replicate.tolist()))
    how = (f"{adv.n_draws:,} draws ({reps} randomized-QMC replicates of {adv.n_draws // reps:,}, "
           f"{INNER} discrepancy scores each; stages {', '.join(f'{n:,}' for n in adv.stages)})"
           if reps else f"{adv.n_draws:,} draws")
    ses = quoted(rows)
    r2 = sorted(iv.control_r2 for iv in ses.values() if iv.control_r2 == iv.control_r2)
    if r2:
        how += (f"; deltas with a control variate on the draws' prior quantiles, R² "
                f"{r2[0]:.2f}-{r2[-1]:.2f}")
    known = {k: iv.mc_se for k, iv in ses.items() if iv.mc_se == iv.mc_se}
    if not known:
        return f"Monte Carlo: {how}; no MC SE (fewer than 2 replicates)"
    label, worst = max(known.items(), key=lambda kv: kv[1])
    head = (f"Monte Carlo: {how}; largest MC SE of a quoted delta end {worst:.2f} points "
            f"({label})")
    late = missed(rows, adv.target)
    if not late:
        return head + f"; target {adv.target:g}: met"
    listed = "; ".join(f"{k} {v:.2f}" for k, v in late[:4]) + ("; ..." if len(late) > 4 else "")
    if adv.stopped == "cap":
        d = adv.dep
        why = (f"{d.cap_from}: add --max-draws to let the draws double"
               if d.cap_from.startswith("--draws") else
               f"the next stage's {2 * adv.n_draws:,} would pass {d.cap_from} {d.max_draws:,}")
    else:
        why = "no MC SE to aim at" if adv.stopped == "no MC SE" else adv.stopped or "one stage"
    return (head + f"; target {adv.target:g} not met at {adv.n_draws:,} draws ({why}) "
            f"by {len(late)} of {len(known)}: "
            f"{listed}: quote those ends to the nearest point. A verdict whose end lies within "
            f"{MC_MARGIN:g} MC SE of a region's bound says cannot tell")


def sampler_json(adv: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`--json`: the design, the stages and each quoted delta end's MC SE against the target."""
    from mtpsim.uncertainty.advise import INNER, draws_needed, missed

    reps = 0 if adv.replicate is None else len(set(adv.replicate.tolist()))
    r2 = {k: iv.control_r2 for k, iv in quoted(rows).items() if iv.control_r2 == iv.control_r2}
    return {"method": "randomized QMC (scrambled Sobol replicates) x conditional Monte Carlo over "
            "the discrepancy scores" + (" x a cross-fitted control variate on the draws' prior "
                                        "quantiles (deltas)" if r2 else ""),
            "replicates": reps, "inner_scores": INNER, "control_r2": r2,
            "stages": adv.stages, "stage_worst_mc_se": adv.stage_se, "max_draws": adv.cap,
            "mc_se_target": adv.target, "stopped_by": adv.stopped,
            "not_met": dict(missed(rows, adv.target)),
            "draws_needed": draws_needed(rows, adv.target, adv.n_draws),
            "mc_se": {k: iv.mc_se for k, iv in quoted(rows).items()},
            "effective_draws": {k: iv.eff_draws for k, iv in quoted(rows).items()}}


def verdict_lines(adv: Any, prob: float, doubt: dict | None) -> list[str]:
    """The k sentence, MTP on, the recommendation, what cannot be told and how to decide it."""
    from mtpsim.report.fit import COMMAND

    rk, rp, riv = adv.recommendation(prob)
    k, p, _, _ = adv.best_median(prob)
    best = adv.best_fresh()
    pct = round(100 * prob)
    out = []
    others = [(kk, adv.gain_interval(kk, "fresh", prob)) for kk in adv.ks() if kk != best]
    if others:  # ranked by median throughput, as best_fresh and the table's tok/s column
        import numpy as np

        kk, g = max(others, key=lambda o: float(np.median(adv.mix(o[0], "fresh",
                                                                  "output_throughput"))))
        sure = "robustly ahead of" if below(g, 0.0) else "but cannot tell it from"
        out.append(f"k: fresh k={best} has the best median throughput, {sure} the next best, "
                   f"k={kk} at {delta_interval(g)} (P(k={kk} better) = {g.p_pos:.2f})")
    gains = {(kk, pp): adv.gain_interval(kk, pp, prob) for kk, pp in adv.pairs()}
    if 0 in adv.ks() and best > 0:
        g = adv.no_mtp_interval(best, "fresh", prob)
        out.append(f"MTP on: fresh k={best} against plain decoding (k=0, no MTP) {delta_interval(g)} in "
                   f"output throughput, P(gain > 0) = {g.p_pos:.2f}")
    if (rk, rp) != (best, "fresh"):
        out.append(f"recommended: k={rk}, {rp}: expected gain over the best fresh setting (k={best}) "
                   f"{delta_interval(riv)} in output throughput, P(gain > 0) = {riv.p_pos:.2f}; "
                   f"{_level(adv, rk, rp, prob)}")
    else:
        out.append(f"recommended: k={rk}, {rp}: {_level(adv, rk, rp, prob)} (the best "
                   "fresh setting, the baseline of the gains)")
        alt = max((c for c in gains if c != (best, "fresh")), key=lambda c: gains[c].median,
                  default=None)
        if alt is not None and doubt is None:
            g = gains[alt]
            out.append(f"next best: k={alt[0]}, {alt[1]} at {delta_interval(g)}, P(gain > 0) = "
                       f"{g.p_pos:.2f}")
    if doubt is not None:
        g = doubt["gain_pct"]
        why = f"{doubt['measurement']} parameters ({', '.join(doubt['params'])}) "
        why += (f"carry {doubt['variance_share']:.2f} of its variance"
                if doubt["ranked_by"] == "variance share" else
                f"move it most (by rank correlation: {len(adv.draws)} draws are too few for "
                "variance shares)")
        if doubt["extrapolated"]:
            why += (f", and k={k}'s cells lie outside the PR's measured setup, which widens it "
                    f"({'; '.join(doubt['extrapolated'][:2])})")
        gain = signed_interval(g["median"], g["lo"], g["hi"], 2, " %")
        out.append(f"cannot tell: k={k}, {p} has the best median, {gain} over fresh k={best} (P(gain > 0) = "
                   f"{g['p_pos']:.2f}), but its {_not_clear(g, pct)}, so fresh k={best} stays "
                   f"the recommendation. Why: {why}. The measurement that would decide it (k={k} "
                   f"at context {doubt['context']:,}, where the answer is widest):")
        out += [COMMAND + line.removeprefix("mtpsim ") for line in doubt["command"].splitlines()]
        out.append(f"(the cell's settings are in {doubt['point']}: the PR's experiment with "
                   f"k={k}, context {doubt['context']:,} and the deployment's GPU, TP, "
                   "quantization and concurrency)")
    worse = [(kk, pp, g) for (kk, pp), g in gains.items() if below(g, 0.0)]
    if worse:
        out.append(f"robustly worse than fresh k={best}: " + "; ".join(
            f"k={kk} {pp} {delta_interval(g)}" for kk, pp, g in worse))
    if adv.skipped:
        out.append(f"skipped ({adv.skipped_why}): {'; '.join(adv.skipped)}")
    far = sorted({n for notes in adv.notes.values() for n in notes})
    if far:
        out.append("EXTRAPOLATED beyond the PR's measured setup (k = 3, ~10K context, B200 TP4 "
                   "NVFP4): " + "; ".join(far[:6]) + ("; ..." if len(far) > 6 else ""))
    out.append(f"{len(adv.cells)} cells ({len(adv.pairs())} k x policy settings) x "
               f"{adv.n_draws:,} draws in {adv.wall_s:.1f} s wall")
    return out


def legend(adv: Any, prob: float, share: bool = True) -> list[str]:
    """What each number printed above means (the share vs fresh columns' only where printed)."""
    from mtpsim.uncertainty.intervals import region

    pct = round(100 * prob)
    same_k = ("P(>+R) = share of draws where share beats fresh by more than the region of "
              f"practical equivalence R = {region('output_throughput'):g} %; MC SE (eff.) = the "
              "Monte Carlo SE of the interval's ends in points (the larger) and the independent "
              "draws that would give it; ") if share else ""
    return [f"how to read: the figures in brackets are the {pct} % interval over the "
            f"{adv.n_draws:,} parameter draws, the figure before them their median; gain = % "
            "output throughput over the best fresh k (gain vs no MTP: over plain decoding, k=0); "
            f"P(gain>0) = share of draws where it is positive; {same_k}an EXTRAPOLATED note's (n) "
            "is how far a cell lies outside the PR's measured setup, in octaves (doublings or "
            "halvings) of k, context, top-k and batch, plus half-units of temperature"]


def _level(adv: Any, k: int, policy: str, prob: float) -> str:
    thr = adv.level_interval(k, policy, "output_throughput", prob)
    tpot = adv.level_interval(k, policy, "median_tpot_ms", prob)
    return (f"{interval(thr.median, thr.lo, thr.hi, ',.0f')} output tok/s, median TPOT "
            f"{interval(tpot.median, tpot.lo, tpot.hi, '.2f')} ms")


def _not_clear(g: dict, pct: int) -> str:
    """Why a gain is not robust (mtpsim.uncertainty.advise.above): its interval reaches 0, or its
    lower end lies above 0 by less than its Monte Carlo margin."""
    from mtpsim.verdict import MC_MARGIN

    if g["lo"] <= 0:
        return f"{pct} % interval spans 0"
    return (f"{pct} % interval's lower end (+{g['lo']:.2f} %) is within {MC_MARGIN:g} Monte Carlo "
            f"SEs ({g.get('mc_se', float('nan')):.2f} points) of 0")
