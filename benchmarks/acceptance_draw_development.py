"""Development, post hoc on SEEN campaigns (v15-v18): which per-request acceptance draw gives
acceptance-length intervals of the stated coverage? (docs/uncertainty.md, section 29)

v17 and v18 registered `acceptance.request_draw = "independent"` (each simulated request draws its
logit shift i.i.d. from the fit's N(0, sigma): section 23 found the seed-only spread of a run's
acceptance length 1.08-1.26x the real runs' request-bootstrap SE on v14-v16). v18's fit had sigma
0.33 (v17 0.22), and its acceptance-length intervals scored 22 of 22 at 90 % with a median
half-width of 3.43 % inside the range (limit 3 %). This script re-predicts every scored
configuration of a shipped campaign from that campaign's own shipped fit, paired, 128 draws
(campaign_v11.predict's method: the same quantiles, the configurations as registered), once per
request draw ("independent", "stratified": the workload's shifts at stratified quantiles, mean 0),
and scores acceptance length as the campaigns do (the real run's request-bootstrap SE, v10's
`_al_se`; mtpsim.uncertainty.scoring): coverage of the model's intervals at 50 / 80 / 90 / 95 %,
the median half-width inside the range, the interval score (90 %).

These campaigns' results have been read: nothing here is held out; it says what a next campaign
could declare, not how well it would do.

    python benchmarks/acceptance_draw_development.py --campaigns v15 v16 v17 v18 --out runs/al-draw \
        [--draws 128] [--write docs/data/acceptance-draw-development.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))

import shipped_campaign  # noqa: E402
from campaign_v10 import DRAWS, POLICIES, QS, _al_se  # noqa: E402

AL = "spec_decode_acceptance_length"
DRAWS_MODES = ("independent", "stratified")
LEVELS = (0.5, 0.8, 0.9, 0.95)


def predict_al(cal: Path, spec: Path, draw: str, draws: int) -> dict:
    """Quantiles of each policy's acceptance length: campaign_v11.predict's propagation, paired, with
    the request draw set."""
    import numpy as np

    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.run import propagate

    sets = [f"calibration.file={json.dumps(str(cal))}", "uncertainty.paired=true",
            f"acceptance.request_draw={json.dumps(draw)}"]
    run = propagate(str(spec), sets, draws, default_workers())
    return {"inside": not run.extrapolation.flagged,
            "levels": {p: dict(zip(QS, np.quantile([v[p][AL] for v in run.values], QS).tolist(), strict=True))
                       for p in POLICIES}}


def campaign(name: str, out: Path, draws: int) -> dict:
    from mtpsim.uncertainty.scoring import Scored

    exp = ROOT / "experiments" / "heldout" / name
    cal = shipped_campaign.copy_fit(name, out)
    values: dict[str, list] = {d: [] for d in DRAWS_MODES}
    for cfg, _, res in shipped_campaign.scored_configs(name):
        for d in DRAWS_MODES:
            t = time.time()
            pred = predict_al(cal.resolve(), exp / f"{cfg}.toml", d, draws)
            print(f"{name} {cfg} {d}: {time.time() - t:.0f} s", flush=True)
            for p in POLICIES:
                values[d].append(Scored(cfg, p, AL, float(res[p].get(AL)), pred["levels"][p], _al_se(res[p]),
                                        0.0, pred["inside"]))
    return {d: summary(vs) for d, vs in values.items()}


def summary(values: list) -> dict:
    from mtpsim.uncertainty.scoring import interval_score

    inside = [v for v in values if v.inside]
    hw = [100 * (v.quantiles[0.95] - v.quantiles[0.05]) / 2 / v.median for v in inside]
    return {"values": len(values), "inside": len(inside),
            "coverage": {str(L): statistics.fmean(v.covered(L) for v in values) for L in LEVELS},
            "above_median": statistics.fmean(v.real > v.median for v in values),
            "median_half_width_inside_pct": statistics.median(hw) if hw else None,
            "interval_score_90": statistics.fmean(
                interval_score(v.quantiles[0.05], v.quantiles[0.95], v.real, 0.9) for v in values),
            "rows": [{"config": v.config, "policy": v.what, "real": v.real, "se": v.measurement_se,
                      "median": v.median, "q05": v.quantiles[0.05], "q95": v.quantiles[0.95],
                      "inside_range": v.inside} for v in values]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", nargs="+", default=["v15", "v16", "v17", "v18"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--draws", type=int, default=DRAWS)
    ap.add_argument("--write", type=Path)
    a = ap.parse_args()
    rep = {c: campaign(c, a.out, a.draws) for c in a.campaigns}
    print(f"{'campaign':8s} {'draw':12s} {'n':>3s}  " + "  ".join(f"{int(100 * L)} %" for L in LEVELS)
          + "  above-median  half-width inside  IS90")
    for c, r in rep.items():
        for d, s in r.items():
            cov = "  ".join(f"{100 * s['coverage'][str(L)]:3.0f}%" for L in LEVELS)
            print(f"{c:8s} {d:12s} {s['values']:3d}  {cov}  {100 * s['above_median']:5.0f} %  "
                  f"{s['median_half_width_inside_pct']:6.2f} %  {s['interval_score_90']:.4f}")
    if a.write:
        from mtpsim.fileio import atomic_write_json

        atomic_write_json(a.write, {"command": "python benchmarks/acceptance_draw_development.py --campaigns "
                                    + " ".join(a.campaigns) + f" --draws {a.draws}", "draws": a.draws,
                                    "campaigns": rep})


if __name__ == "__main__":
    main()
