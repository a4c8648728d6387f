"""Where the held-out step-cost predictions miss: per phase, measured vs calibrated seconds.

For each run under runs/heldout (calibration and held-out, `fresh` traces of every round), prices
every traced engine step with the calibration's phase models and sums measured and predicted
seconds, separately for decode-only steps and steps that prefill a prompt.
Run (after benchmarks/heldout_validation.py): python benchmarks/heldout_phase_errors.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from mtpsim.calibration import read_calibration
from mtpsim.calibration.fit import step_quantities
from mtpsim.models.cost import cost_features
from mtpsim.trace import read_trace

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("calibrate", "k2-conc4", "k3-long-conc2", "k3-top128-conc16", "k4-top32-conc1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "heldout")
    ap.add_argument("--calibration", type=Path, default=ROOT / "experiments" / "heldout" / "calibration.json")
    ap.add_argument("--names", nargs="*", default=list(RUNS),
                    help="run folders under --runs (their real/ subfolder; calibrate: itself)")
    args = ap.parse_args()
    cal = read_calibration(args.calibration)
    print(f"{'run':<18} {'phase':<22} {'decode steps: meas / pred s':>28} "
          f"{'prefill steps: meas / pred s':>30}")
    for name in args.names:
        base = args.runs / name / ("" if name == "calibrate" else "real")
        paths = sorted(base.glob("round-*/fresh.trace.jsonl")) or [base / "fresh.trace.jsonl"]
        meas_dec, pred_dec, meas_pre, pred_pre = {}, {}, {}, {}
        for path in paths:
            tr = read_trace(path)
            q, _ = step_quantities(tr)
            feats = cost_features(q, tr.num_speculative_tokens, tr.index_topk)
            dec = np.asarray(q.prefill_done) == 0
            for phase, fit in cal.cost.phases.items():
                pred = sum(c * feats[phase][n] for n, c in zip(fit.features, fit.coef, strict=True))
                pred = np.broadcast_to(np.asarray(pred, float), dec.shape)
                meas = np.array([s.phases[phase] for s in tr.steps])
                for d, v in ((meas_dec, meas[dec]), (pred_dec, pred[dec]), (meas_pre, meas[~dec]),
                             (pred_pre, pred[~dec])):
                    d[phase] = d.get(phase, 0.0) + float(v.sum())
        for phase in cal.cost.phases:
            print(f"{name:<18} {phase:<22} {meas_dec[phase]:>13.2f} / {pred_dec[phase]:<12.2f} "
                  f"{meas_pre[phase]:>15.2f} / {pred_pre[phase]:<12.2f}")


if __name__ == "__main__":
    main()
