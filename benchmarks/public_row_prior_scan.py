"""What one prior's value does to a corpus row, the other drawn priors at their medians.

    python benchmarks/public_row_prior_scan.py ROW [ROW ...] --param mem_efficiency \
        --quantiles 0.05,0.25,0.5,0.75,0.95

Each row's experiments/public/<id>.toml (as `benchmarks/public_corpus.py` runs it) is simulated
once per quantile of `--param`'s prior, every other prior the experiment draws at its median
(quantile 0.5; the discrepancy scores at 0), seeded as `--uncertainty`'s draws are. Printed per
row: the value, median and P99 TTFT, median TPOT, median ITL and output throughput beside the
row's measured ones, and the quantile and value at which the prediction crosses the measured
figure, for each (linear between the grid's points; "-" where it does not cross). Read it
for training rows only (docs/data/public/split.toml): it is a fit when a prior is moved by it.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHOWN = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "median_itl_ms", "output_throughput")


def measured(row_id: str) -> dict[str, float]:
    rows = tomllib.loads((ROOT / "docs/data/public/rows.toml").read_text())["row"]
    return next(r for r in rows if r["id"] == row_id)["measured"]


def scan(row_id: str, param: str, quantiles: list[float]) -> dict:
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.draws import Z_NAMES, drawn_priors, plan, run_draws

    exp = load_experiment(str(Path("experiments") / "public" / f"{row_id}.toml"))
    names = list(drawn_priors(exp))
    if param not in names:
        return {"id": row_id, "error": f"{param} is not drawn for this row"}
    u = np.full((len(quantiles), len(names) + len(Z_NAMES)), 0.5)
    u[:, names.index(param)] = quantiles
    draws = plan(exp, len(quantiles), unit=u)
    values = [v for _, v in run_draws(exp, draws)]
    policy = exp.policies[0]
    return {"id": row_id, "param": param, "measured": measured(row_id),
            "grid": [{"quantile": q, "value": d.values[param],
                      **{m: v[policy][m] for m in SHOWN}}
                     for q, d, v in zip(quantiles, draws, values, strict=True)]}


def crossing(grid: list[dict], metric: str, target: float) -> tuple[float, float] | None:
    ys = [g[metric] - target for g in grid]
    for a, b, ya, yb in zip(grid, grid[1:], ys, ys[1:], strict=False):
        if ya == 0 or ya * yb < 0:
            t = ya / (ya - yb) if ya != yb else 0.0
            return (a["quantile"] + t * (b["quantile"] - a["quantile"]),
                    a["value"] + t * (b["value"] - a["value"]))
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+")
    ap.add_argument("--param", required=True)
    ap.add_argument("--quantiles", default="0.05,0.25,0.5,0.75,0.95")
    args = ap.parse_args(argv)
    qs = [float(x) for x in args.quantiles.split(",")]
    for row_id in args.rows:
        if not (ROOT / "experiments" / "public" / f"{row_id}.toml").exists():
            print(f"experiments/public/{row_id}.toml: no such row experiment", file=sys.stderr)
            return 2
        r = scan(row_id, args.param, qs)
        if "error" in r:
            print(f"{row_id}: {r['error']}")
            continue
        m = r["measured"]
        print(f"{row_id}: measured " + ", ".join(f"{k} {m[k]:.4g}" for k in SHOWN if k in m))
        for g in r["grid"]:
            print(f"  q {g['quantile']:.2f} {args.param} {g['value']:.4g}: "
                  + ", ".join(f"{k} {g[k]:.4g}" for k in SHOWN))
        for metric in SHOWN:
            if metric in m:
                c = crossing(r["grid"], metric, m[metric])
                print(f"  {metric} crosses the measured at "
                      + (f"q {c[0]:.2f}, {args.param} {c[1]:.4g}" if c else "-"))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
