"""Rich tables of a calibration's fit (residuals, R^2), and loading traces for a fit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from mtpsim.calibration.schema import Calibration
from mtpsim.policies import traits
from mtpsim.report.numbers import number
from mtpsim.result import PHASES


def fit_from_traces(paths: Sequence[Path]) -> Calibration:
    """Read the traces (TraceError names a bad file) and fit a calibration to them."""
    from mtpsim.calibration.fit import fit_traces
    from mtpsim.trace import read_trace

    traces = [read_trace(p) for p in paths]
    return with_trace_meta(fit_traces(traces, sources=[str(p) for p in paths]), traces)


def with_trace_meta(cal: Calibration, traces) -> Calibration:
    """Record the machine the traces ran on and the temperatures they sampled at."""
    import dataclasses

    machines = [tr.meta.machine for tr in traces if tr.meta.machine is not None]
    temps = sorted({float(tr.meta.temperature) for tr in traces if tr.meta.temperature is not None})
    ranges = {**cal.ranges, **({"temperature": temps} if temps else {})}
    # the context range the runs were set up to cover (prompt lengths drawn from it), so a
    # repeat of the calibration's own spec does not read as extrapolation by sampling chance
    nominal = [tr.meta.context_range for tr in traces if _pair(tr.meta.context_range)]
    if nominal and ranges.get("context_len"):
        lo, hi = ranges["context_len"][0], ranges["context_len"][-1]
        ranges["context_len"] = [float(min(lo, *(n[0] for n in nominal))),
                                 float(max(hi, *(n[1] for n in nominal)))]
    machine = machines[0] if machines and all(m == machines[0] for m in machines) else (
        {"machines": machines} if machines else {})
    machine = {**machine, **probe_figures(traces)}
    return dataclasses.replace(cal, machine=machine, ranges=ranges)


def probe_figures(traces) -> dict[str, float | int]:
    """The machine-speed probe of the traces' runs (mtpsim.probe): mean wall and CPU seconds over
    every reading taken around them, and the readings' relative spread; {} without probes."""
    from mtpsim.probe import figure

    readings = [p for tr in traces for p in (tr.meta.probe or []) if isinstance(p, dict)]
    wall, cpu = figure(readings, "wall"), figure(readings, "cpu")
    if wall is None or cpu is None:
        return {}
    walls = [float(p["wall_s"]) for p in readings if p.get("wall_s")]
    sd = (sum((w - wall) ** 2 for w in walls) / (len(walls) - 1)) ** 0.5 if len(walls) > 1 else 0.0
    return {"probe_wall_s": wall, "probe_cpu_s": cpu, "probe_readings": len(walls),
            "probe_wall_rel_sd": sd / wall}


def _pair(v) -> bool:
    return (isinstance(v, list) and len(v) == 2
            and all(isinstance(x, int | float) and math.isfinite(x) and x > 0 for x in v))


def acceptance_fit_table(cal: Calibration) -> Table:
    a = cal.acceptance
    kappa = "-" if a.kappa is None else f"{a.kappa:.3g}"
    steps = "" if not a.kappa_steps else (
        "; per draft step (penalty kappa_step) " + " / ".join(f"{x:.3g}" for x in a.kappa_steps))
    t = Table(title=f"Acceptance fit: conditional rate per position (L_ref {a.context_ref:.0f}, "
              f"request spread sigma {a.sigma:.2f}, overlap->acceptance kappa {kappa}{steps})",
              title_justify="left")
    for col in ("Policy", "Pos", "Events", "Observed", "Fitted", "b0", "b1 (per ln L)"):
        t.add_column(col, justify="left" if col == "Policy" else "right")
    for policy, rep in a.report.items():
        rows = a.policies.get(policy, a.base)
        for j, pp in enumerate(rep.get("per_position", [])):
            i = pp["pos"]
            b0, b1 = rows[min(i, len(rows) - 1)]
            t.add_row(policy if j == 0 else "", str(i), str(pp["n"]), f"{100 * pp['observed']:.2f}%",
                      f"{100 * pp['predicted']:.2f}%", f"{b0:+.3f}", f"{b1:+.3f}")
        alt = rep.get("kappa_step")
        t.add_row("", "bins", str(rep.get("events", "")), "", "",
                  f"R² {number(rep.get('r2'), '.2f')}",
                  f"|res| {number(rep.get('mean_abs_residual_pts'), '.2f')} pts", end_section=not alt)
        if alt:  # the per-step form, on the fitted overlap curve
            fitted = " / ".join(f"{100 * pp['predicted']:.1f}" for pp in alt.get("per_position", []))
            t.add_row("", "kappa_step", "", "", f"{fitted} %", f"R² {number(alt.get('r2'), '.2f')}",
                      f"|res| {number(alt.get('mean_abs_residual_pts'), '.2f')} pts", end_section=True)
    return t


def overlap_fit_table(cal: Calibration) -> Table:
    t = Table(title="Top-k overlap fit (reused vs fresh row, per draft step)", title_justify="left")
    for col in ("Policy", "Step", "Records", "Observed", "Fitted", "R²", "RMSE"):
        t.add_column(col, justify="left" if col == "Policy" else "right")
    for policy, steps in cal.overlap.report.items():
        for j, s in enumerate(steps):
            t.add_row(policy if j == 0 else "", str(s["step"]), str(s["n"]),
                      f"{s['mean_observed']:.3f}", f"{s['mean_predicted']:.3f}", number(s.get("r2"), ".2f"),
                      number(s.get("rmse"), ".3f"))
    return t


def cost_fit_table(cal: Calibration) -> Table:
    c = cal.cost
    t = Table(title=f"Step-cost fit to measured phase timings (host gap {1e6 * c.gap_s:.0f} µs/step; "
              f"step R² {number(c.report.get('step_r2'), '.3f')}, decode-step MAPE "
              f"{number(c.report.get('step_mape_pct'), '.1f')} %)", title_justify="left")
    for col in ("Phase", "Steps", "R²", "RMSE (ms)", "Coefficients"):
        t.add_column(col, justify="left" if col in ("Phase", "Coefficients") else "right")
    for p in PHASES:
        fit = c.phases[p]
        coefs = ", ".join(f"{n} {1e6 * v:.3g}µs" for n, v in zip(fit.features, fit.coef, strict=True) if v)
        att = c.report.get("attention", {}).get(p)
        if att:  # the per-key price came from the traced sparse-attention seconds
            coefs += (f" (sparse attention {att['share_pct']:.0f} % of the phase: "
                      f"{att['ns_per_key']:.3g} ns/key + {att.get('us_per_call', 0.0):.3g} µs/call, "
                      f"R² {number(att['r2'], '.2f')})")
        t.add_row(p, str(fit.n), number(fit.r2, ".3f"), number(1e3 * fit.rmse_s, ".3f"), coefs or "0")
    for tr in c.report.get("traces", []):
        t.add_row(f"  total, {tr['policy']}", str(tr["steps"]), "", "",
                  f"measured {tr['measured_s']:.2f} s, fitted {tr['predicted_s']:.2f} s "
                  f"({tr['error_pct']:+.1f} %)")
    return t


def fit_tables(cal: Calibration) -> list[Table]:
    return [acceptance_fit_table(cal), overlap_fit_table(cal), cost_fit_table(cal)]


def overlap_points(paths: Sequence[Path]) -> dict[str, list[tuple[int, int, float]]]:
    """policy -> (draft step, context length, overlap) from traces, for plots.overlap."""
    from mtpsim.trace import read_trace

    out: dict[str, list[tuple[int, int, float]]] = {}
    for p in paths:
        tr = read_trace(p)
        if traits(tr.policy).indexer == "every":  # selects as fresh: no overlap recorded
            continue
        pts = out.setdefault(tr.policy, [])
        for st in tr.steps:
            for r in st.requests:
                pts.extend((s + 1, r.context_len, float(o)) for s, o in enumerate(r.overlap))
    return out
