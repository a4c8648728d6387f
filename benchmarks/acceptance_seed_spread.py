"""The simulator's acceptance length across simulation seeds with every parameter held at a
campaign's calibration fit (no --uncertainty): its SD over seeds with the per-request shifts drawn
stratified (default) or independent (acceptance.request_draw), against the real run's request-
bootstrap SE (score.json's measurement_se). docs/uncertainty.md §23; post hoc, seen data.

    python benchmarks/acceptance_seed_spread.py --campaign v16 --seeds 16
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
METRIC = "spec_decode_acceptance_length"


def spread(camp: str, name: str, draw: str, seeds: int) -> dict[str, float]:
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    cal = ROOT / "docs" / "data" / f"heldout-{camp}" / "calibration-bootstrap.json"
    out = {}
    for p in ("fresh", "share"):
        als = []
        for s in range(seeds):
            exp = load_experiment(str(ROOT / "experiments" / "heldout" / camp / f"{name}.toml"),
                                  [f"calibration.file={json.dumps(str(cal))}", f"seed={9000 + s}",
                                   f'acceptance.request_draw="{draw}"'])
            als.append(float(simulate(exp, p, records=False).get(METRIC)))
        out[p] = float(np.std(als, ddof=1))
    return out


def widened(camp: str, extra: dict[tuple[str, str], float]) -> None:
    """The registered predictions (128 draws) read as normal (median, SD from the 5-95 % range),
    then with the variance the independent draw adds (SD^2 independent - stratified, seeds only):
    coverage of the real acceptance lengths at 50/80/90/95 %, and the mean squared z."""
    data = ROOT / "docs" / "data" / f"heldout-{camp}"
    rows = json.loads((data / "score.json").read_text())["rows"]
    z = {0.5: 0.6745, 0.8: 1.2816, 0.9: 1.6449, 0.95: 1.96}
    for label, add in (("registered", 0.0), ("registered + independent draw", 1.0)):
        errs = []
        for (name, p), x in extra.items():
            q = json.loads((data / "predictions" / f"{name}.json").read_text())["levels"][p][METRIC]
            real = next(r["real"] for r in rows if (r["config"], r["what"], r["metric"]) == (name, p, METRIC))
            sd = np.sqrt(((q["0.95"] - q["0.05"]) / 3.29) ** 2 + add * x)
            errs.append(abs(real - q["0.5"]) / sd)
        cov = "/".join(f"{100 * np.mean([e <= z[lv] for e in errs]):.0f}" for lv in z)
        print(f"{label}: normal reading, coverage 50/80/90/95 {cov}, mean z^2 "
              f"{np.mean(np.square(errs)):.2f} ({len(errs)} rows)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", default="v16")
    ap.add_argument("--seeds", type=int, default=16)
    args = ap.parse_args(argv)
    score = ROOT / "docs" / "data" / f"heldout-{args.campaign}" / "score.json"
    rows = json.loads(score.read_text())["rows"]
    se = {(r["config"], r["what"]): r["measurement_se"] for r in rows if r["metric"] == METRIC}
    ratios: dict[str, list[float]] = {"stratified": [], "independent": []}
    extra: dict[tuple[str, str], float] = {}
    print(f"{'config':<28}{'policy':<7}{'real SE':>8}{'SD strat':>9}{'SD indep':>9}")
    for name in sorted({c for c, _ in se}):
        got = {d: spread(args.campaign, name, d, args.seeds) for d in ratios}
        for p in ("fresh", "share"):
            extra[(name, p)] = max(got["independent"][p] ** 2 - got["stratified"][p] ** 2, 0.0)
            print(f"{name:<28}{p:<7}{se[(name, p)]:>8.4f}{got['stratified'][p]:>9.4f}"
                  f"{got['independent'][p]:>9.4f}", flush=True)
            for d in ratios:
                ratios[d].append(got[d][p] / se[(name, p)])
    widened(args.campaign, extra)
    for d, r in ratios.items():
        print(f"{d}: median SD over seeds / real measurement SE = {np.median(r):.2f} "
              f"(IQR {np.quantile(r, .25):.2f}-{np.quantile(r, .75):.2f}, {len(r)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
