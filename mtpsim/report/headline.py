"""The answer `mtpsim simulate` puts first: the share-vs-fresh verdict with its interval (from the
saved `--uncertainty` summary of this very spec, mtpsim.uncertainty.saved), the measured delta
beside it, and the single seeded simulation labelled as what it is. numpy-free.
"""

from __future__ import annotations

from typing import Any

from mtpsim.report.numbers import signed
from mtpsim.spec import Experiment
from mtpsim.uncertainty.saved import DECISIVE, measured_delta, saved_interval

_PCT = (2, " %", "−")  # signed percent, minus sign set as in prose


def headline(exp: Experiment, results: dict[str, Any], overridden: bool,
             setup_changed: bool = False) -> list[str]:
    """The first lines of a plain simulate: verdict + interval, measured delta, this run.
    `overridden`: a flag or --set changed what the file simulates (the saved interval is not of
    it); `setup_changed`: one changed the measured setup (the measured delta is not of it)."""
    if len(results) < 2:
        return []
    from mtpsim.verdict import same_program

    base, policy = exp.policies[0], exp.policies[1]
    if same_program(policy, base, exp.k):
        return [f"{policy} vs {base}: the same program at k = {exp.k} (no draft step reuses a row)"]
    a, b = results[base].get(DECISIVE), results[policy].get(DECISIVE)
    sim = 100.0 * (b / a - 1) if a else float("nan")
    out = []
    saved = saved_interval(exp, policy, overridden)
    if isinstance(saved, dict):
        iv, n, eff = saved["iv"], saved["draws"], saved["eff"]
        se = f", MC SE {iv['mc_se']:.2f}" if isinstance(iv.get("mc_se"), int | float) else ""
        out.append(f"{policy} vs {base}, output throughput: {iv['verdict'].upper()} "
                   f"{signed(iv['median'], *_PCT)} [{signed(iv['lo'], *_PCT)}, {signed(iv['hi'], *_PCT)}] "
                   f"({round(100 * saved['prob'])} % interval, {saved['which']}; {n} draws, "
                   f"{eff:.0f} effective{se}; {saved['path']})")
    else:
        out.append(f"{policy} vs {base}, output throughput: no interval for these settings "
                   f"({saved}); mtpsim simulate {exp.source} --uncertainty 64 gives one")
    if (meas := measured_delta(exp, policy, base)) is not None:
        src = exp.calibration.measured_source or "the measured rows"
        where = " at the measured setup, not these settings" if setup_changed else ""
        out.append(f"  measured{where}: {signed(meas, *_PCT)} ({src})")
    run = ("one run at expected acceptance" if exp.acceptance.mode == "expected"
           else "one seeded run")
    out.append(f"  this simulation: {signed(sim, *_PCT)} ({run}, no interval; the table below)")
    return out
