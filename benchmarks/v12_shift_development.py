"""v12 rescored with the workload-shift term (docs/uncertainty.md §4 and §14): a DEVELOPMENT
check, in-sample, NOT a test. v12's calibration has one workload kind, so its predictions carry
the stated prior (decode 0.15, prefill 0.09), and that prior was set from v12's own post-hoc step
replay: these data had been seen, and covering them proves nothing. It shows what the prior does
to v12's intervals (coverage, widths) with everything else as registered: the same calibration,
128 draws, the specs' rounds, v11/v12's scoring and criteria unchanged (campaign_v12.score).

    python benchmarks/v12_shift_development.py [--out docs/data/heldout-v12/development-shift]

Predictions go to OUT/predictions (kept: a rerun rescores them); the real results are read from
docs/data/heldout-v12 as shipped. One worker per prediction (taskset -c 0 keeps it to one core).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v11 as v11  # noqa: E402
import campaign_v12 as v12  # noqa: E402

DATA = ROOT / "docs" / "data" / "heldout-v12"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DATA / "development-shift")
    a = ap.parse_args()
    from mtpsim.calibration.schema import read_calibration
    from mtpsim.fileio import atomic_write_json

    (a.out / "predictions").mkdir(parents=True, exist_ok=True)
    shift = read_calibration(DATA / "calibration-bootstrap.json").shift
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "calibration-bootstrap.json").symlink_to(DATA / "calibration-bootstrap.json")
        (t / "predictions").symlink_to((a.out / "predictions").resolve())
        for name in v12.CONFIGS:
            (t / name).mkdir()
            (t / name / "real").symlink_to(DATA / name / "real")
            v11.predict(t, name, v12.EXP)
            print(f"predicted {name}", flush=True)
        rep = v12.score(t)
        shutil.copyfile(t / "score.json", a.out / "score.json")
    registered = json.loads((DATA / "score.json").read_text())
    summary = {"note": "DEVELOPMENT, in-sample: v12's data were seen when the prior was set from "
                       "its step replay; this shows the prior's effect and tests nothing",
               "workload_shift": {"decode_sd": shift.decode_sd, "prefill_sd": shift.prefill_sd,
                                  "source": shift.source, "note": shift.note},
               "with_shift": _figures(rep), "as_registered": _figures(registered)}
    atomic_write_json(a.out / "summary.json", summary)
    print(json.dumps(summary, indent=1))


def _figures(rep: dict) -> dict:
    """The registered figures of a score, and each metric's model-alone 90 % coverage of levels."""
    levels = [r for r in rep["rows"] if r["what"] != "share - fresh"]
    crit = rep["verdict"]["criteria"]
    return {"coverage_model": rep["all"]["coverage"]["model"],
            "coverage_ci95": rep["all"]["coverage_ci95"], "above_median": rep["all"]["above_median"],
            "above_median_by_metric": rep.get("above_median_by_metric"),
            "covered_90_by_metric": {m: [sum(r["q05"] <= r["real"] <= r["q95"] for r in rs), len(rs)]
                                     for m in v11.METRICS
                                     for rs in [[r for r in levels if r["metric"] == m]]},
            "interval_score": rep["interval_score"],
            "half_widths_inside_pct": {k.removeprefix("half_width_inside_"): c["value_pct"]
                                       for k, c in crit.items() if k.startswith("half_width")},
            "criteria_met": {k: c["ok"] for k, c in crit.items()}}


if __name__ == "__main__":
    main()
