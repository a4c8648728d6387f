"""The API server's admission cost (calibration.frontend_ms_per_request) against the public
corpus's TRAINING rows: each vLLM training row the prior acts on (no max_concurrency) is
simulated once, seeded, with every other drawn parameter at its prior's median (the draw at the
unit cube's centre, discrepancy scores 0), at each admission cost of a grid; printed beside the
measured TTFT, TPOT and throughput. Test rows are refused: the prior may rest on training rows
only (docs/data/public/split.toml).

    python benchmarks/frontend_prior_fit.py [--ms 0,2,4,...] [--rows ID ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "public"
KEYS = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "output_throughput")
GRID = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0)


def training_rows(asked: list[str] | None) -> list[dict]:
    """The vLLM training rows without a concurrency limit (where the prior is drawn), or the
    asked ones, each of which must be one of them."""
    rows = tomllib.loads((DATA / "rows.toml").read_text())["row"]
    split = tomllib.loads((DATA / "split.toml").read_text())["split"]
    usable = {r["id"]: r for r in rows if split.get(r["id"]) == "train" and r["engine"] == "vllm"
              and not r.get("max_concurrency") and r.get("expressible", True)
              and (ROOT / "experiments" / "public" / f"{r['id']}.toml").exists()}
    for rid in asked or ():
        if rid not in usable:
            why = "a test row" if split.get(rid) == "test" else "not a usable training row"
            raise SystemExit(f"error: --rows: {rid} is {why} (usable: {', '.join(sorted(usable))})")
    return [usable[r] for r in asked] if asked else list(usable.values())


def centre_run(path: Path, ms: float) -> dict[str, float]:
    """One seeded simulation of the experiment at the priors' medians, admission cost `ms`."""
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.draws import Z_NAMES, drawn_priors, plan, run_draw

    exp = load_experiment(str(path.relative_to(ROOT)))
    d = len(drawn_priors(exp)) + len(Z_NAMES)
    draw = plan(exp, 1, unit=np.full((1, d), 0.5))[0]
    values = {**draw.values, "frontend_ms_per_request": ms}
    draw = dataclasses.replace(draw, values=values, seed=exp.seed)
    res = run_draw(exp, draw)
    return {k: res[exp.policies[0]][k] for k in KEYS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", default=",".join(f"{x:g}" for x in GRID),
                    help="admission costs to try, ms, comma-separated")
    ap.add_argument("--rows", nargs="*", default=None, help="training row ids (default: all usable)")
    ap.add_argument("--json", type=Path, default=None, help="also write the table here")
    a = ap.parse_args(argv)
    try:
        grid = [float(x) for x in a.ms.split(",")]
        if any(x < 0 for x in grid):
            raise ValueError
    except ValueError:
        print(f"error: --ms: expected comma-separated numbers >= 0, got {a.ms!r}", file=sys.stderr)
        return 2
    try:
        rows = training_rows(a.rows)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    out = []
    for row in rows:
        path = ROOT / "experiments" / "public" / f"{row['id']}.toml"
        meas = {k: row["measured"].get(k) for k in KEYS}
        print(f"{row['id']}  measured " + "  ".join(f"{k}={meas[k]}" for k in KEYS), flush=True)
        for ms in grid:
            got = centre_run(path, ms)
            out.append({"id": row["id"], "ms": ms, "predicted": got, "measured": meas})
            print(f"  {ms:5.1f} ms  " + "  ".join(f"{k}={got[k]:.1f}" for k in KEYS), flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
