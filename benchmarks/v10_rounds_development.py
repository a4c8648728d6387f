"""v10 as a development set (in-sample, NOT a test): its 12 configurations predicted again with
the workload their real runs served (`workload.rounds` = the rounds each ran, mtpsim.sim.rounds)
and scored by v10's registered scorer unchanged (benchmarks/campaign_v10.py `score`).

v10's real data had been seen when this was written, so its figures say how much of v10's miss
the rounds fix explains; they test nothing (docs/uncertainty.md §11-§12). Same calibration,
draws and quantiles as v10's predictions; only the simulated workload differs.

    python benchmarks/v10_rounds_development.py --out runs/v10-dev [--data docs/data/heldout-v10]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v10 as v10  # noqa: E402


def predict(out: Path, name: str, rounds: int) -> None:
    """v10's prediction of `name` (campaign_v10.predict), serving `rounds` rounds as its run did."""
    import numpy as np

    from mtpsim.fileio import atomic_write_json
    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.run import propagate
    from mtpsim.uncertainty.summary import delta_values

    path = out / "predictions" / f"{name}.json"
    if path.is_file():
        return
    cal = str(out.resolve() / "calibration-bootstrap.json")
    run = propagate(str(v10.EXP / f"{name}.toml"), [f"calibration.file={json.dumps(cal)}",
                                                     "uncertainty.paired=false", f"workload.rounds={rounds}"],
                    v10.DRAWS, default_workers())
    vals = run.values
    pred = {"config": name, "inside": not run.extrapolation.flagged, "rounds": rounds,
            "extrapolation": list(run.extrapolation.notes), "draws": len(vals),
            "made_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "levels": {}, "deltas": {}}
    for p in v10.POLICIES:
        pred["levels"][p] = {m: dict(zip(map(str, v10.QS), np.quantile([v[p][m] for v in vals], v10.QS)
                                         .tolist(), strict=True)) for m in v10.METRICS}
    pred["deltas"] = {m: dict(zip(map(str, v10.QS), np.quantile(delta_values(vals, "share", "fresh", m),
                                                                 v10.QS).tolist(), strict=True))
                      for m in v10.METRICS}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, pred)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "v10-dev")
    ap.add_argument("--data", type=Path, default=ROOT / "docs" / "data" / "heldout-v10")
    a = ap.parse_args()
    from mtpsim.result import load_result

    a.out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(a.data / "calibration-bootstrap.json", a.out / "calibration-bootstrap.json")
    for name in v10.CONFIGS:
        real, mine = a.data / name / "real", a.out / name / "real"
        mine.mkdir(parents=True, exist_ok=True)
        for p in v10.POLICIES:  # the pooled results; the scorer reads their rounds and probes
            shutil.copyfile(real / f"{p}.json", mine / f"{p}.json")
        rounds = len(load_result(real / "fresh.json").extra.rounds or [None])
        predict(a.out, name, rounds)
        print(f"{name}: predicted with workload.rounds={rounds}", flush=True)
    rep = v10.score(a.out)
    print(json.dumps({k: v for k, v in rep.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
