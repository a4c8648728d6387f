"""Development, post hoc on SEEN campaigns (v15-v17): would paired delta predictions have scored the
deltas better than the unpaired ones the campaigns registered? (docs/uncertainty.md, §25)

A campaign's real A/B is paired by design: every interleaved round serves the same prompts and
per-request seeds under both policies (mtpsim.rounds). Its registered predictions were unpaired
(`uncertainty.paired = false`: each policy simulated on its own seed, so a predicted delta carries
two different workloads' noise). This script re-predicts each configuration of a shipped campaign
from that campaign's own shipped fit with the campaign's own function (campaign_v11.predict: 128
draws, the same quantiles, the configurations as registered) but with `paired=True`,
then scores the deltas with the campaign's own rule (campaign_v10.scored_deltas,
mtpsim.uncertainty.scoring.report), beside the shipped unpaired predictions' deltas.

These campaigns' results have been read: nothing here is held out; it says what a next campaign
could declare, not how well it would do.

    python benchmarks/paired_delta_development.py --campaigns v15 v16 v17 --out runs/paired-dev \
        [--draws 128] [--write docs/data/paired-delta-development.json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))

import campaign_v11 as v11  # noqa: E402  (its predict, paired)
import shipped_campaign  # noqa: E402
from campaign_v10 import DRAWS, METRICS, scored_deltas  # noqa: E402


def summary(values: list) -> dict:
    from mtpsim.uncertainty.scoring import report

    rep = report(values)
    d = rep["deltas"]
    return {"deltas": len(values), "testable": d["n"],
            "coverage_model_90": d.get("coverage", {}).get("model", {}).get("90"),
            "interval_score": {k: rep["interval_score"][k]["deltas"] for k in rep["interval_score"]},
            "median_half_width": {m: statistics.median((v.quantiles[0.95] - v.quantiles[0.05]) / 2
                                                       for v in values if v.metric == m) for m in METRICS},
            "rows": [{"config": v.config, "metric": v.metric, "real": v.real, "median": v.median,
                      "q05": v.quantiles[0.05], "q95": v.quantiles[0.95], "se": v.measurement_se,
                      "testable": v.testable, "inside": v.covered(0.9)} for v in values]}


def campaign(name: str, out: Path, draws: int) -> dict:
    exp = ROOT / "experiments" / "heldout" / name
    shipped_campaign.copy_fit(name, out)
    unpaired, paired = [], []
    for cfg, shipped, res in shipped_campaign.scored_configs(name):
        t = time.time()
        v11.DRAWS = draws
        new = v11.predict(out / name, cfg, exp, paired=True)  # kept in OUT/NAME/predictions/CFG.json
        print(f"{name} {cfg}: {time.time() - t:.0f} s", flush=True)
        unpaired += scored_deltas(cfg, shipped, res)
        paired += scored_deltas(cfg, {**shipped, "deltas": new["deltas"]}, res)
    return {"unpaired (registered)": summary(unpaired), "paired (post hoc)": summary(paired)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", nargs="+", default=["v15", "v16", "v17"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--draws", type=int, default=DRAWS)
    ap.add_argument("--write", type=Path)
    a = ap.parse_args()
    rep = {c: campaign(c, a.out, a.draws) for c in a.campaigns}
    for c, r in rep.items():
        for way, s in r.items():
            print(f"{c} {way}: {s['testable']} of {s['deltas']} testable, coverage {s['coverage_model_90']}, "
                  f"IS {s['interval_score']}, half-widths {s['median_half_width']}")
    if a.write:
        from mtpsim.fileio import atomic_write_json

        atomic_write_json(a.write, {"command": "python benchmarks/paired_delta_development.py --campaigns "
                                    + " ".join(a.campaigns) + f" --draws {a.draws}", "draws": a.draws,
                                    "campaigns": rep})


if __name__ == "__main__":
    main()
