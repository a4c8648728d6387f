"""Where the held-out step-cost predictions miss: per phase, measured vs calibrated seconds.

For each run under runs/heldout (calibration and held-out, the traces of every round of each
`--policies` policy, `fresh` by default), prices every traced engine step with the calibration's
phase models as the simulator does (mtpsim.models.fitted.FittedCost: a phase the policy skips costs
nothing; overhead includes the fitted gap between steps) and sums measured and predicted seconds,
separately for decode-only steps and steps that prefill a prompt; the last column is the mean per
decode-only step (ms, measured / predicted), which sets policies side by side.
Run (after benchmarks/heldout_validation.py): python benchmarks/heldout_phase_errors.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from mtpsim.calibration import read_calibration
from mtpsim.calibration.fit import step_quantities
from mtpsim.models.fitted import FittedCost
from mtpsim.trace import read_trace

ROOT = Path(__file__).resolve().parents[1]
RUNS = ("calibrate", "k2-conc4", "k3-long-conc2", "k3-top128-conc16", "k4-top32-conc1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "heldout")
    ap.add_argument("--calibration", type=Path, default=ROOT / "experiments" / "heldout" / "calibration.json")
    ap.add_argument("--names", nargs="*", default=list(RUNS),
                    help="run folders under --runs (their real/ subfolder; calibrate: itself)")
    ap.add_argument("--policies", nargs="+", default=["fresh"], help="whose traces to price")
    args = ap.parse_args()
    cal = read_calibration(args.calibration)
    print(f"{'run':<24} {'phase':<22} {'decode steps: meas / pred s':>28} "
          f"{'prefill steps: meas / pred s':>30} {'per decode step: meas / pred ms':>32}")
    for name in args.names:
        for policy in args.policies:
            _price(cal, args.runs / name / ("" if name == "calibrate" else "real"), policy,
                   f"{name} {policy}" if len(args.policies) > 1 else name)


def _price(cal, base: Path, policy: str, label: str) -> None:
    paths = (sorted(base.glob(f"round-*/{policy}.trace.jsonl"))
             or [base / f"{policy}.trace.jsonl"])
    meas_dec, pred_dec, meas_pre, pred_pre = {}, {}, {}, {}
    n_dec = 0
    for path in paths:
        tr = read_trace(path)
        q, _ = step_quantities(tr)
        # the simulator's own pricing: a policy that skips a phase is priced without it
        priced = FittedCost(cal, policy, tr.num_speculative_tokens, tr.index_topk).priced(q)
        dec = np.asarray(q.prefill_done) == 0
        n_dec += int(dec.sum())
        for phase in cal.cost.phases:
            pred = np.broadcast_to(priced[phase], dec.shape)
            meas = np.array([s.phases[phase] for s in tr.steps])
            for d, v in ((meas_dec, meas[dec]), (pred_dec, pred[dec]), (meas_pre, meas[~dec]),
                         (pred_pre, pred[~dec])):
                d[phase] = d.get(phase, 0.0) + float(v.sum())
    per = 1e3 / max(n_dec, 1)
    for phase in cal.cost.phases:
        print(f"{label:<24} {phase:<22} {meas_dec[phase]:>13.2f} / {pred_dec[phase]:<12.2f} "
              f"{meas_pre[phase]:>15.2f} / {pred_pre[phase]:<12.2f} "
              f"{meas_dec[phase] * per:>15.3f} / {pred_dec[phase] * per:<12.3f}")
    print(f"{label:<24} {'decode steps':<22} {n_dec:>13}")


if __name__ == "__main__":
    main()
