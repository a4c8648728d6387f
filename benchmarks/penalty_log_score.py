"""Which acceptance penalty predicts held-out `share` acceptance best, event by event: a paired
per-position log score of each penalty form against a zero-penalty baseline (issue #20 item 8).

Every `share` acceptance event of the held-out traces (a draft position reached in one
verification; y = accepted or not) is scored under each form's predicted conditional rate p
(mtpsim.calibration's FittedAcceptance, averaged over the request spread, at the event's own
context, position and top-k) and under the zero-penalty baseline (the same model for `fresh`:
sharing costs nothing). Log score: y ln p + (1 - y) ln(1 - p). Per position, the mean log-score
difference form - baseline with a request-bootstrap 95 % CI (requests resampled, the same
resample for every form: a paired comparison). Positive: the form beats zero penalty.

    python benchmarks/penalty_log_score.py --calibration experiments/heldout/calibration.json \\
        --traces runs/reference-cpu-rounds/share.trace.jsonl --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from penalty_model import FORMS, distinct, predicted_rates  # noqa: E402

from mtpsim.calibration.fit import acceptance_events  # noqa: E402
from mtpsim.calibration.schema import read_calibration  # noqa: E402
from mtpsim.fileio import atomic_write_json  # noqa: E402
from mtpsim.trace import read_trace  # noqa: E402


def log_scores(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return y * np.log(p) + (1 - y) * np.log(1 - p)


def compare(cal, traces, boot: int = 1000, seed: int = 0) -> dict:
    d = acceptance_events(distinct(list(traces))).arrays(["share"])  # seeded repeats count once
    k = int(d["pos"].max()) + 1
    topk = d["topk"]
    base = log_scores(d["y"], predicted_rates(cal, "kappa", "fresh", d["ctx"], d["pos"], k, topk))
    reqs = np.unique(d["req"])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(reqs), (boot, len(reqs)))
    out: dict = {"events": int(d["y"].size), "requests": int(len(reqs)), "positions": k, "forms": {}}
    for form in FORMS:
        diff = log_scores(d["y"], predicted_rates(cal, form, "share", d["ctx"], d["pos"], k, topk)) - base
        per_pos = {}
        for i in range(k):
            m = d["pos"] == i
            if not m.any():
                continue
            # per request: sum of differences and events at position i (bootstrap over requests)
            idx = np.searchsorted(reqs, d["req"][m])
            s = np.bincount(idx, weights=diff[m], minlength=len(reqs))
            n = np.bincount(idx, minlength=len(reqs)).astype(float)
            means = s[picks].sum(1) / np.maximum(n[picks].sum(1), 1)
            per_pos[str(i)] = {"mean": float(s.sum() / n.sum()), "events": int(n.sum()),
                               "ci95": np.percentile(means, [2.5, 97.5]).tolist()}
        # every position at once (each event weighs the same): the v11 decision reads this
        idx = np.searchsorted(reqs, d["req"])
        s = np.bincount(idx, weights=diff, minlength=len(reqs))
        n = np.bincount(idx, minlength=len(reqs)).astype(float)
        means = s[picks].sum(1) / np.maximum(n[picks].sum(1), 1)
        per_pos["all"] = {"mean": float(s.sum() / n.sum()), "events": int(n.sum()),
                          "ci95": np.percentile(means, [2.5, 97.5]).tolist()}
        out["forms"][form] = per_pos
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", type=Path, required=True)
    ap.add_argument("--traces", type=Path, nargs="+", required=True)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    res = compare(read_calibration(a.calibration), [read_trace(p) for p in a.traces], a.boot)
    res["calibration"], res["traces"] = str(a.calibration), [str(p) for p in a.traces]
    for form, per in res["forms"].items():
        cells = "; ".join(f"pos {i} {v['mean']:+.4f} [{v['ci95'][0]:+.4f}, {v['ci95'][1]:+.4f}]"
                          for i, v in per.items())
        print(f"{form} - zero penalty, mean log score per event: {cells}")
    if a.out:
        atomic_write_json(a.out, res)
    print(json.dumps({k: v for k, v in res.items() if k != "forms"}))


if __name__ == "__main__":
    main()
