"""Rich tables of a calibration's fit: acceptance per position, top-k overlap per draft step and
the step-cost fit per phase (residuals, R²)."""

from __future__ import annotations

from rich.table import Table

from mtpsim.calibration.schema import Calibration
from mtpsim.report.numbers import number
from mtpsim.result import PHASES


def acceptance_fit_table(cal: Calibration) -> Table:
    a = cal.acceptance
    kappa = number(a.kappa, ".3g")
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
