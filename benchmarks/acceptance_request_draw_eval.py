"""Post-hoc re-prediction of the held-out campaigns' acceptance length with the per-request shifts
drawn stratified (the registered model) or independent (acceptance.request_draw), under the
declared penalty or kappa_lk (docs/uncertainty.md §23). SEEN data: every configuration scored here
was looked at before this was written. Each campaign uses its own shipped calibration
(calibration-bootstrap.json) and its own configuration specs; the real figures and `inside` come
from its score.json rows.

    python benchmarks/acceptance_request_draw_eval.py --campaigns v16 v15 v14 --draws 32 \
        --json docs/data/acceptance-request-draw.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
QS = (0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975)
LEVELS = (0.5, 0.8, 0.9, 0.95)
METRIC = "spec_decode_acceptance_length"
VARIANTS = {"declared/stratified": ([], None), "declared/independent": (["independent"], None),
            "kappa_lk/stratified": ([], "kappa_lk"), "kappa_lk/independent": (["independent"], "kappa_lk")}


def predict(camp: str, name: str, variant: str, draws: int, jobs: int) -> dict[str, list[float]]:
    from mtpsim.uncertainty.run import propagate

    ind, pen = VARIANTS[variant]
    cal = ROOT / "docs" / "data" / f"heldout-{camp}" / "calibration-bootstrap.json"
    sets = [f"calibration.file={json.dumps(str(cal))}", "uncertainty.paired=false"]
    sets += [f'acceptance.request_draw="{d}"' for d in ind]
    sets += [f'acceptance.penalty="{pen}"'] if pen else []
    run = propagate(str(ROOT / "experiments" / "heldout" / camp / f"{name}.toml"), sets, draws, jobs)
    return {p: np.quantile([v[p][METRIC] for v in run.values], QS).tolist() for p in ("fresh", "share")}


def score(rows: list[dict]) -> dict:
    cov = {str(lv): float(np.mean([_inside(r, lv) for r in rows])) for lv in LEVELS}
    above = float(np.mean([r["real"] > r["q"][QS.index(0.5)] for r in rows]))
    hw = [100 * (r["q"][QS.index(0.95)] - r["q"][QS.index(0.05)]) / 2 / r["q"][QS.index(0.5)]
          for r in rows if r["inside"]]
    # steadier at 32 draws: median +- z * (IQR / 1.349), central quantiles only (a normal reading)
    z = {0.5: 0.6745, 0.8: 1.2816, 0.9: 1.6449, 0.95: 1.96}
    sd = [(r["q"][QS.index(0.75)] - r["q"][QS.index(0.25)]) / 1.349 for r in rows]
    cov_n = {str(lv): float(np.mean([abs(r["real"] - r["q"][QS.index(0.5)]) <= z[lv] * s
                                     for r, s in zip(rows, sd, strict=True)])) for lv in LEVELS}
    zz = [((r["real"] - r["q"][QS.index(0.5)]) / s) ** 2 for r, s in zip(rows, sd, strict=True)]
    return {"n": len(rows), "coverage": cov, "coverage_normal_iqr": cov_n, "above_median": above,
            "mean_z2": float(np.mean(zz)), "median_z2": float(np.median(zz)),
            "half_width_inside_pct": statistics.median(hw) if hw else None}


def _inside(r: dict, level: float) -> bool:
    lo, hi = QS.index(round((1 - level) / 2, 4)), QS.index(round(1 - (1 - level) / 2, 4))
    return r["q"][lo] <= r["real"] <= r["q"][hi]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", nargs="+", default=["v16", "v15", "v14"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--draws", type=int, default=32)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--configs", nargs="*", help="only these configurations (default: all)")
    ap.add_argument("--merge", nargs="*", type=Path, default=[],
                    help="score only: the rows of these files (of earlier runs) and --json's")
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args(argv)
    out = json.loads(args.json.read_text()) if args.json.is_file() else {"draws": args.draws, "rows": []}
    for m in args.merge:
        out["rows"] += json.loads(m.read_text())["rows"]
    keyed = {(r["campaign"], r["config"], r["policy"], r["variant"]): r for r in out["rows"]}
    out["rows"] = list(keyed.values())
    done = {(r["campaign"], r["config"], r["variant"]) for r in out["rows"]}
    for camp in [] if args.merge else args.campaigns:
        score_path = ROOT / "docs" / "data" / f"heldout-{camp}" / "score.json"
        score_rows = json.loads(score_path.read_text())["rows"]
        real = {(r["config"], r["what"]): r for r in score_rows if r["metric"] == METRIC}
        for name in sorted({c for c, _ in real if not args.configs or c in args.configs}):
            for variant in args.variants:
                if (camp, name, variant) in done:
                    continue
                t0 = time.time()
                q = predict(camp, name, variant, args.draws, args.jobs)
                for p in ("fresh", "share"):
                    r = real[(name, p)]
                    out["rows"].append({"campaign": camp, "config": name, "policy": p, "variant": variant,
                                        "real": r["real"], "measurement_se": r["measurement_se"],
                                        "inside": r["inside"], "q": q[p]})
                args.json.write_text(json.dumps(out, indent=1) + "\n")
                print(f"{camp} {name} {variant} {time.time() - t0:.0f}s", flush=True)
    out["scores"] = {}
    for variant in VARIANTS:
        for camp in [*args.campaigns, "all"]:
            sel = [r for r in out["rows"] if r["variant"] == variant and camp in ("all", r["campaign"])]
            if sel:
                out["scores"][f"{camp} {variant}"] = score(sel)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    for k, s in out["scores"].items():
        pct = "/".join(f"{100 * s['coverage'][str(lv)]:.0f}" for lv in LEVELS)
        pct_n = "/".join(f"{100 * s['coverage_normal_iqr'][str(lv)]:.0f}" for lv in LEVELS)
        hw = s["half_width_inside_pct"]
        print(f"{k:<32} n={s['n']:>3} cov50/80/90/95 {pct} (IQR-normal {pct_n})  above-median "
              f"{100 * s['above_median']:.0f} %  half-width inside "
              + (f"{hw:.2f} %" if hw is not None else "-")
              + f"  z2 mean/median {s['mean_z2']:.2f}/{s['median_z2']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
