"""Development, post hoc on SEEN campaigns (docs/uncertainty.md §28, §31): the share - fresh timing
deltas taken on each round's own machine level, as the campaigns from v14 on take levels (§28), or
on the out-of-engine probe timed right before and after each policy's half of a round (§31).

The registered score (campaign_v10.scored_deltas) takes a timing delta as the mean of the per-round
percentage differences, trusting the within-round pairing to cancel the machine's drift. v18's one
delta miss came with the in-engine level probe reading the machine 1.23x slower during `fresh` in
every round. Here each round's figure is first put on a common level (TPOT divided by the round's
level, throughput multiplied by it: mtpsim.level's dense CPU figure) and the delta taken after;
its SE over the rounds as before. Acceptance-length deltas are unchanged (no timing in them).

Predictions: the campaign's shipped ones (v18 registered paired, v11-v17 unpaired), or with
`--paired-from DIR` the paired re-predictions that benchmarks/paired_delta_development.py keeps in
DIR/<campaign>/predictions/<config>.json. Scored with mtpsim.uncertainty.scoring.report, deltas only.
These campaigns' results have been read: nothing here is held out.

    python benchmarks/delta_level_rescore.py --campaigns v15 v16 v17 v18 [--paired-from runs/paired-dev]
                                             [--write FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from campaign_v10 import METRICS, POLICIES, scored_deltas  # noqa: E402
from shipped_campaign import round_probe, scored_configs  # noqa: E402

TIMINGS = ("output_throughput", "median_tpot_ms")


def _level(round_: dict) -> float | None:
    """The round's in-engine dense level (mtpsim.level, CPU figure)."""
    from mtpsim.level import figure

    return figure(round_.get("level"), "cpu")


def round_deltas(res: dict, metric: str, machine: Callable[[dict], float | None]) -> list[float] | None:
    """Per-round % deltas share vs fresh of `metric`, each policy's half of a round put on its own
    `machine` figure first (a duration divided by it, a rate multiplied)."""
    rounds = {p: res[p].extra.rounds or [] for p in POLICIES}
    if len(rounds["fresh"]) != len(rounds["share"]) or len(rounds["fresh"]) < 2:
        return None
    out = []
    for f, s in zip(rounds["fresh"], rounds["share"], strict=True):
        lf, ls = machine(f), machine(s)
        if not lf or not ls or metric not in f["metrics"] or metric not in s["metrics"]:
            return None
        sign = 1 if metric == "output_throughput" else -1  # a rate scales up with a faster machine
        a, b = f["metrics"][metric] * lf ** sign, s["metrics"][metric] * ls ** sign
        out.append(100 * (b / a - 1))
    return out


def rescored(campaign: str, paired_from: Path | None) -> dict:
    from mtpsim.uncertainty.scoring import Scored, report

    raw, levelled, probed = [], [], []
    for cfg, pred, res in scored_configs(campaign):
        if paired_from is not None:
            cache = paired_from / campaign / "predictions" / f"{cfg}.json"
            pred = {**pred, "deltas": json.loads(cache.read_text())["deltas"]}
        before = scored_deltas(cfg, pred, res)
        raw += before
        for machine, kept in ((_level, levelled), (round_probe, probed)):
            for v in before:
                xs = round_deltas(res, v.metric, machine) if v.metric in TIMINGS else None
                if v.metric in TIMINGS and xs is None:
                    continue
                if xs is None:
                    kept.append(v)
                    continue
                q = {float(k): x for k, x in pred["deltas"][v.metric].items()}
                se = statistics.stdev(xs) / math.sqrt(len(xs))
                kept.append(Scored(cfg, v.what, v.metric, statistics.fmean(xs), q, se, 0.0, pred["inside"],
                                   delta=True))
    out = {}
    for name, vs in (("registered (within rounds)", raw), ("on each round's level", levelled),
                     ("on each half's out-of-engine probe", probed)):
        rep = report(vs)
        out[name] = {"deltas": len(vs), "testable": rep["deltas"]["n"],
                     "inside_90": rep["deltas"].get("coverage", {}).get("model", {}).get("90"),
                     "interval_score": {k: rep["interval_score"][k]["deltas"] for k in rep["interval_score"]},
                     "rows": [{"config": v.config, "metric": v.metric, "real": v.real, "se": v.measurement_se,
                               "q05": v.quantiles[0.05], "median": v.median, "q95": v.quantiles[0.95],
                               "testable": v.testable, "covered_90": v.covered(0.9)}
                              for v in vs if v.metric in METRICS]}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", nargs="+", default=["v15", "v16", "v17", "v18"])
    ap.add_argument("--paired-from", type=Path)
    ap.add_argument("--write", type=Path)
    a = ap.parse_args()
    rep = {c: rescored(c, a.paired_from if c != "v18" else None) for c in a.campaigns}
    for c, r in rep.items():
        for way, s in r.items():
            is_ = {k: (round(x, 1) if x is not None else None) for k, x in s["interval_score"].items()}
            print(f"{c} {way}: {s['testable']} of {s['deltas']} testable, inside at 90 % {s['inside_90']}, "
                  f"interval score {is_}")
    if a.write:
        from mtpsim.fileio import atomic_write_json

        cmd = "python benchmarks/delta_level_rescore.py --campaigns " + " ".join(a.campaigns)
        cmd += " --paired-from runs/paired-dev" if a.paired_from else ""
        atomic_write_json(a.write, {"command": cmd, "campaigns": rep})


if __name__ == "__main__":
    main()
