"""Which priors set the width of a corpus row's intervals, per metric.

    python benchmarks/public_row_sensitivity.py ROW [ROW ...] --uncertainty 32 --jobs 1

Runs each row of docs/data/public/rows.toml as `benchmarks/public_corpus.py` does (its
experiments/public/<id>.toml, `propagate` with the same seed and draws, no conditioning) and
prints, for median TTFT, median TPOT and output throughput, the row's 90 % interval half-width
(as the corpus runner scores it) and mtpsim's sensitivity table for that metric: each prior's
Spearman rank correlation with the metric over the draws and its binned first-order variance
share (`mtpsim.uncertainty.sensitivity.table`, the table `simulate --uncertainty` prints for
output throughput). At a few dozen draws the shares are noisy: read them as a ranking.
Read it for training rows only (docs/data/public/split.toml).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("median_ttft_ms", "median_tpot_ms", "output_throughput")


def row_sensitivity(row_id: str, n: int, jobs: int, top: int) -> dict:
    from mtpsim.uncertainty import sensitivity as sens
    from mtpsim.uncertainty.priors import PARAMS
    from mtpsim.uncertainty.run import PRIOR, propagate

    path = Path("experiments") / "public" / f"{row_id}.toml"
    t0 = time.perf_counter()
    run = propagate(str(path), [], n, jobs=jobs, condition=False)
    policy = run.policies[0]
    summary = run.summary(PRIOR)["metrics"][policy]
    draws = run.draws[:run.prior_n]
    # the drawn priors' quantiles (as UncertaintyRun.sensitivity, which at k = 0 leaves out the
    # acceptance priors: nothing is drafted, so their correlations are chance; no discrepancy
    # term is drawn for an experiment without calibration, so the priors are all there is)
    inert = ({n for n, p in PARAMS.items() if p.target.startswith(("acceptance.", "scale:draft_"))}
             if run.exp.k == 0 else set())
    inputs = {name: np.array([d.unit[name] for d in draws]) for name in draws[0].unit
              if name not in inert}
    out = {"id": row_id, "policy": policy, "draws": len(draws),
           "wall_s": round(time.perf_counter() - t0, 1), "metrics": {},
           "unit": {name: x.tolist() for name, x in inputs.items()}}
    for metric in METRICS:
        iv = summary[metric]
        y = np.array([v[policy][metric] for v in run.values[:run.prior_n]])
        table = sens.table(inputs, y)[:top]
        out["metrics"][metric] = {"values": y.tolist(),
            "median": iv.median, "lo": iv.lo, "hi": iv.hi,
            "half_width_pct": 100.0 * (iv.hi - iv.lo) / 2.0 / iv.median,
            "sensitivity": [{"param": s.param, "rho": round(s.rho, 3), "share": round(s.share, 3)}
                            for s in table]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--uncertainty", type=int, default=32)
    ap.add_argument("--jobs", "-j", type=int, default=1)
    ap.add_argument("--top", type=int, default=6)
    ap.add_argument("--out", type=Path, help="write the tables as JSON to this file")
    args = ap.parse_args(argv)
    results = []
    for row_id in args.rows:
        if not (ROOT / "experiments" / "public" / f"{row_id}.toml").exists():
            print(f"experiments/public/{row_id}.toml: no such row experiment "
                  "(expected an expressible row id of docs/data/public/rows.toml)", file=sys.stderr)
            return 2
        r = row_sensitivity(row_id, args.uncertainty, args.jobs, args.top)
        results.append(r)
        print(f"{row_id} ({r['draws']} draws, {r['wall_s']} s)")
        for metric, m in r["metrics"].items():
            print(f"  {metric}: median {m['median']:.4g} [{m['lo']:.4g}, {m['hi']:.4g}], "
                  f"half-width {m['half_width_pct']:.1f} %")
            for s in m["sensitivity"]:
                print(f"    {s['param']:<26} rho {s['rho']:+.2f}  share {s['share']:.2f}")
        sys.stdout.flush()
        if args.out:
            args.out.write_text(json.dumps({"uncertainty": args.uncertainty, "rows": results},
                                           indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
