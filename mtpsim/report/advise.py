"""The rich table of `mtpsim advise`: per k and policy, throughput and TPOT with their intervals,
the gain over the best fresh setting and over no MTP, and share against fresh at the same k."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from mtpsim.report.numbers import delta_interval, interval
from mtpsim.uncertainty.summary import verdict


def advise_table(adv: Any, rows: list[dict], prob: float) -> Table:
    """Per k and policy: throughput and TPOT with intervals, the gains and the same-k verdict."""
    d = adv.dep
    t = Table(title=f"{d.description or d.source}: mix of contexts {list(d.contexts)} "
              f"(weights {list(d.weights)}), concurrency {list(d.concurrency)}; median "
              f"[{round(100 * prob)} % interval] over {d.draws} draws", title_justify="left",
              box=box.SIMPLE_HEAD)
    for col in ("k", "policy", "output tok/s", "median TPOT ms", "gain vs best fresh",
                "P(gain>0)", "gain vs no MTP", "share vs fresh, same k", "P(>+R)", "verdict"):
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
                  "" if same is None else delta_interval(same),
                  "" if same is None or r["k"] == 1 else f"{same.p_above:.2f}",
                  "" if same is None else verdict(same, "share", "fresh", "output_throughput", r["k"]))
    return t
