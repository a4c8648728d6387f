"""Rich tables of an uncertainty run: intervals per policy, deltas with P(> 0) and a verdict,
what conditioning did, the sensitivity table, the measurement to make next, and the
`sweep --uncertainty` grid."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.table import Table

from mtpsim.report.fit import COMMAND
from mtpsim.report.numbers import interval, number, signed_interval
from mtpsim.uncertainty.draws import BENCH_METRICS, METRICS
from mtpsim.uncertainty.intervals import Interval, verdict
from mtpsim.uncertainty.posterior import ess
from mtpsim.uncertainty.run import ALL_ROWS, PRIOR, UncertaintyRun

LABELS = {"request_throughput": ("Request throughput (req/s)", ",.3f"),
          "output_throughput": ("Output throughput (tok/s)", ",.1f"),
          "total_token_throughput": ("Total token throughput (tok/s)", ",.1f"),
          **{f"{stat}_{m}_ms": (f"{stat.capitalize() if stat[0] != 'p' else stat.upper()} "
                                f"{m.upper()} (ms)", ",.0f" if m in ("ttft", "e2el") else ".2f")
             for stat in ("mean", "median", "p90", "p99") for m in ("ttft", "tpot", "itl", "e2el")},
          "spec_decode_acceptance_length": ("Acceptance length", ".3f")}


def choose_metrics(spec: str | None) -> tuple[str, ...]:
    """`--metrics`: none or 'default' = the short table, 'all' = every figure `vllm bench serve`
    prints, else a comma-separated list of its key names."""
    from mtpsim.errors import UserError

    if spec in (None, "", "default"):
        return METRICS
    if spec == "all":
        return BENCH_METRICS
    keys = tuple(dict.fromkeys(k.strip() for k in spec.split(",") if k.strip()))  # once each
    bad = [k for k in keys if k not in BENCH_METRICS]
    if bad or not keys:
        raise UserError(None, "--metrics", f"expected 'default', 'all' or keys from "
                        f"{', '.join(BENCH_METRICS)}; got {', '.join(bad) or repr(spec)}")
    return keys


def _iv(iv: Interval, spec: str) -> str:
    return interval(iv.median, iv.lo, iv.hi, spec)


def _delta(iv: Interval, metric: str) -> str:
    if metric == "spec_decode_acceptance_length":
        return signed_interval(iv.median, iv.lo, iv.hi, 4)
    return signed_interval(iv.median, iv.lo, iv.hi, 2, " %")


def _se(iv: Interval, metric: str) -> str:
    return number(iv.mc_se, ".4f" if metric == "spec_decode_acceptance_length" else ".2f")


def intervals_table(run: UncertaintyRun, which: str, metrics: tuple[str, ...] = METRICS) -> Table:
    s = run.summary(which)
    pct = round(100 * run.prob)
    what = ("priors only" if which == PRIOR else
            f"conditioned on {which}, {ess(run.weights[which]):.1f} effective"
            + (", adaptive importance sampling" if run.design is not None else ""))
    flag = " · EXTRAPOLATED" if run.extrapolation.flagged else ""
    n = run.prior_n if which == PRIOR else len(run.draws)
    t = Table(title=f"{run.experiment}: median [{pct} % interval] over {n} draws ({what}){flag}",
              title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("Metric")
    for p in run.policies:
        t.add_column(p, justify="right")
    base = run.policies[0]
    for p in run.policies[1:]:
        t.add_column(f"{p} vs {base}", justify="right")
        t.add_column("P(Δ>+R)", justify="right")
        t.add_column("MC SE", justify="right")
        t.add_column("verdict")
    for m in metrics:
        label, fmt = LABELS[m]
        cells = [_iv(s["metrics"][p][m], fmt) for p in run.policies]
        for p in run.policies[1:]:
            iv = s["deltas"][p][m]
            cells += [_delta(iv, m), number(iv.p_above, ".2f", "n/a"), _se(iv, m),
                      verdict(iv, p, base, m, run.exp.k) if math.isfinite(iv.median) else "n/a"]
        t.add_row(label, *cells)
    return t


def measured_table(run: UncertaintyRun) -> Table:
    """Conditioned predictions beside the measured rows, TTFT included (not conditioned on)."""
    t = Table(title="Conditioned prediction vs measured (TTFT is not conditioned on: a check)",
              title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("Policy", "Metric", "Measured", "Prior", "Conditioned", "Measured inside?"):
        t.add_column(col, justify="left" if col in ("Policy", "Metric") else "right")
    prior, cond = run.summary(PRIOR), run.summary(ALL_ROWS)
    for p, row in run.measured.items():
        if p not in cond["metrics"]:  # a measured row of a policy not simulated
            continue
        for m in METRICS:
            v = row.get(m)
            if not isinstance(v, int | float):
                continue
            label, fmt = LABELS[m]
            iv = cond["metrics"][p][m]
            t.add_row(p, label, format(v, fmt), _iv(prior["metrics"][p][m], fmt), _iv(iv, fmt),
                      "yes" if iv.lo <= v <= iv.hi else "NO")
    return t


def narrowing_table(run: UncertaintyRun) -> Table:
    """How much each measurement narrowed the decisive interval (and the others)."""
    policy, metric = run.decisive()
    base = run.policies[0]
    t = Table(title=f"What each measurement did to the {policy} vs {base} intervals "
              "(width of the interval)", title_justify="left", box=box.SIMPLE_HEAD)
    t.add_column("Conditioned on")
    t.add_column("effective draws", justify="right")
    for m in METRICS:
        t.add_column(LABELS[m][0].split(" (")[0] + " Δ", justify="right")
    prior = run.summary(PRIOR)["deltas"][policy]
    t.add_row("nothing (priors)", str(run.prior_n),
              *[_width(prior[m], m) for m in METRICS])
    for name, w in run.weights.items():
        d = run.summary(name)["deltas"][policy]
        t.add_row(name, f"{ess(w):.1f}",
                  *[f"{_width(d[m], m)} ({100 * (_w(d[m]) / max(_w(prior[m]), 1e-12) - 1):+.0f} %)"
                    for m in METRICS])
    return t


def noise_sensitivity_table(run: UncertaintyRun) -> Table | None:
    """The decisive verdicts under 1-4 % assumed run-to-run timing noise of the measured rows."""
    rows = run.noise_sensitivity()
    if not rows:
        return None
    policy, _ = run.decisive()
    pct = round(100 * run.prob)
    t = Table(title=f"{policy} vs {run.policies[0]} conditioned on all measured rows, had one run's "
              f"timing noise been 0.5-4 % (assumed {100 * run.noise.timing_sd:.1f} %)",  # type: ignore[union-attr]
              title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("timing noise", "eff. draws", "MC SE", f"throughput Δ [{pct} %]", "verdict",
                f"TPOT Δ [{pct} %]", "verdict"):
        t.add_column(col, justify="left" if col == "verdict" else "right")
    target, missed = run.exp.uncertainty.mc_se_target, False
    for r in rows:
        thr, tpot = r["output_throughput"], r["median_tpot_ms"]
        se = r.get("mc_se")
        over = se is not None and se > target
        missed |= over
        t.add_row(f"{r['timing_noise_pct']:g} %", f"{r['effective_draws']:.1f}",
                  "-" if se is None else f"{se:.2f}{'*' if over else ''}",
                  signed_interval(thr["median"], thr["lo"], thr["hi"], 2, " %"), thr["verdict"],
                  signed_interval(tpot["median"], tpot["lo"], tpot["hi"], 2, " %"), tpot["verdict"])
    if missed:
        t.caption = (f"* MC SE above the {target:g} target: the rows re-weight the draws made for the "
                     "assumed noise, so their ends are not held to it, and a verdict there must clear "
                     "its bound by 2 MC SEs; --set uncertainty.timing_noise_pct=P draws for P itself")
        t.caption_justify = "left"
    return t


def _w(iv: Interval) -> float:
    return iv.hi - iv.lo


def _width(iv: Interval, metric: str) -> str:
    return f"{_w(iv):.4f}" if metric == "spec_decode_acceptance_length" else f"{_w(iv):.2f} pts"


def sensitivity_table(run: UncertaintyRun, top: int = 8) -> Table:
    policy, metric = run.decisive()
    what = (f"{policy} vs {run.policies[0]} {LABELS[metric][0]} delta" if len(run.policies) > 1
            else f"{policy} {LABELS[metric][0]}")
    t = Table(title=f"Sensitivity of the {what} ({run.prior_n} prior draws)", title_justify="left",
              box=box.SIMPLE_HEAD)
    for col in ("Parameter", "Spearman ρ", "variance share (binned S1)"):
        t.add_column(col, justify="left" if col == "Parameter" else "right")
    for s in run.sensitivity()[:top]:
        t.add_row(s.param, f"{s.rho:+.2f}", f"{s.share:.2f}")
    return t


def intervals_groups(run: UncertaintyRun) -> list[int]:
    """Column blocks of the intervals table when it is cut to fit: one per policy, then each
    delta with its P(Δ>0) and verdict."""
    return [1] * len(run.policies) + [4] * (len(run.policies) - 1)


def lines(run: UncertaintyRun) -> list[str]:
    """What the tables do not say, one sentence a line; the command to run next on its own."""
    out = []
    dom, ext = run.domain, run.extrapolation
    if dom is None:
        out.append("calibrated range: none (no measured rows, no calibration file): the priors "
                   "alone carry the uncertainty")
    else:
        out.append(f"calibrated range: {dom.source}")
    if ext.flagged:
        out.append("EXTRAPOLATED: " + "; ".join(ext.notes) + f" -> timing discrepancy SD "
                   f"{100 * run.spread.time:.1f} %, acceptance {100 * run.spread.accept:.1f} %")
    elif dom is not None:
        out.append(f"inside the calibrated range: timing discrepancy SD {100 * run.spread.time:.1f} %")
    if run.noise is not None:
        out.append(f"noise model: {run.noise.describe()}")
    out += [f"note: {n}" for n in run.notes]
    group, share, params, cmd = run.recommendation()
    policy, metric = run.decisive()
    what = (f"{policy} vs {run.policies[0]} throughput delta's" if len(run.policies) > 1
            else f"{policy} throughput's")
    out.append(f"measure next: {group} (pins {', '.join(params[:3])}; {share:.2f} of the "
               f"{what} variance):")
    out += [COMMAND + line.removeprefix("mtpsim ") for line in cmd.splitlines()]
    if len(run.policies) > 1:
        out.append(mc_line(run))
    out.append(f"{len(run.draws)} draws x {len(run.policies)} policies in {run.wall_s:.1f} s wall "
               f"on {run.jobs} worker{'s' if run.jobs > 1 else ''}")
    return out


def mc_line(run: UncertaintyRun) -> str:
    """Whether the quoted delta ends are steady to `uncertainty.mc_se_target`, and the draws
    that would be."""
    from mtpsim.uncertainty.adaptive import MIN_PILOT

    which = run.best()
    ivs = [iv for d in run.summary(which)["deltas"].values() for m, iv in d.items()
           if m in METRICS and m != "spec_decode_acceptance_length" and not math.isnan(iv.mc_se)]
    worst = max((iv.mc_se for iv in ivs), default=math.nan)
    eff = run.prior_n if which == PRIOR else ess(run.weights[which])
    target = run.exp.uncertainty.mc_se_target
    stages = ([n for n, _ in run.design.stages] if run.design is not None and which != PRIOR
              else [])
    how = (f"{run.prior_n} prior + {len(run.draws) - run.prior_n} adaptive importance-sampling "
           "draws" if len(stages) > 1 else f"{len(run.draws)} draws")
    head = (f"Monte Carlo: {how} ({eff:.1f} effective, {which}); largest MC SE of a quoted "
            f"timing-delta end {worst:.2f} points")
    if worst <= target:
        return head + f" (target {target}: met)"
    need = int(math.ceil(len(run.draws) * (worst / target) ** 2 / 32) * 32)
    if run.design is not None and which != PRIOR:
        return head + (f" > target {target}: ends move by that much with the seed; about "
                       f"--set uncertainty.max_draws={need} would meet it")
    if which != PRIOR and run.prior_n < MIN_PILOT:
        return head + (f" > target {target}: ends move by that much with the seed; "
                       f"--uncertainty {MIN_PILOT} or more adds adaptive importance-sampling "
                       "draws until it is met")
    return head + (f" > target {target}: ends move by that much with the seed; about "
                   f"--uncertainty {need} would meet it")


def _ends(d: dict) -> tuple[float, float, float]:
    return d["median"], d["lo"], d["hi"]


def sweep_table(experiment: str, keys: list[str], records: list[dict], n: int) -> Table:
    """`sweep --uncertainty`: per grid point and policy, throughput and TPOT with their 90 %
    intervals, the throughput delta against the first policy with P(Δ>0) and its verdict."""
    t = Table(title=f"{experiment} sweep: median [90 % interval] over {n} draws per point",
              title_justify="left", box=box.SIMPLE_HEAD)
    for k in keys:
        t.add_column(k.split(".")[-1].replace("num_speculative_tokens", "k"), justify="right")
    for col in ("policy", "out tok/s", "TPOT ms", "Δ tok/s", "P(Δ>0)", "verdict", "flags"):
        t.add_column(col)
    for rec in records:
        for row in rec["rows"]:
            d = row.get("throughput_delta_pct")
            t.add_row(*[str(rec["values"][k]) for k in keys], row["policy"],
                      interval(*_ends(row["output_throughput"]), ",.0f"),
                      interval(*_ends(row["median_tpot_ms"]), ".2f"),
                      "" if d is None else signed_interval(*_ends(d), 2, " %"),
                      "" if d is None else number(d["p_pos"], ".2f"), row.get("verdict", ""),
                      "EXTRAPOLATED" if rec["flags"] else "")
    return t


def print_run(console: Any, run: UncertaintyRun, shown: tuple[str, ...] = METRICS) -> None:
    """Every table of an uncertainty run, each cut to the terminal's width, then the lines."""
    from mtpsim.report.fit import print_lines, print_table

    groups = intervals_groups(run)
    print_table(console, intervals_table(run, PRIOR, shown), group=groups)
    if ALL_ROWS in run.weights:
        print_table(console, intervals_table(run, ALL_ROWS, shown), group=groups)
        print_table(console, measured_table(run), keep=2)
        if len(run.policies) > 1:  # one policy: no delta for a measurement to narrow
            print_table(console, narrowing_table(run))
        if (noise_table := noise_sensitivity_table(run)) is not None:
            print_table(console, noise_table, keep=1)
    print_table(console, sensitivity_table(run))
    print_lines(console, lines(run))


def print_sweep(console: Any, table: Table, axes: int) -> None:
    """The `sweep --uncertainty` grid cut to fit: the grid values and the policy label repeat;
    a delta keeps its P and verdict."""
    from mtpsim.report.fit import print_table

    print_table(console, table, keep=axes + 1, group=(1, 1, 3, 1))
