"""Development, post hoc on SEEN campaigns: where does the one-sided timing lean sit? (docs/uncertainty.md
§27). Every timing miss in v14-v17 was a run faster than its interval (median real over predicted
median TPOT 0.96); this reads the shipped scores (levels only, as scored: timings on the fit's unit
by each run's own dense level) and splits the real / predicted-median time ratio (TPOT as it is,
output throughput inverted, so < 1 means faster than predicted) by the configuration's prompt length,
concurrency and k, with Spearman's rho against each.

These campaigns' results have been read: nothing here is held out.

    python benchmarks/timing_lean_by_shape.py [--campaigns v14 v15 v16 v17] [--write FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMINGS = ("median_tpot_ms", "output_throughput")
CTX_BINS = ((0, 600), (600, 900), (900, 1200), (1200, 1600), (1600, 100_000))


def rows(campaigns: list[str]) -> list[dict]:
    """One row per scored timing level: the configuration's shape and real / predicted time."""
    out = []
    for v in campaigns:
        score = json.loads((ROOT / "docs" / "data" / f"heldout-{v}" / "score.json").read_text())
        for r in score["rows"]:
            if r["metric"] not in TIMINGS or r["what"] not in ("fresh", "share"):
                continue
            spec = tomllib.loads((ROOT / "experiments" / "heldout" / v / f"{r['config']}.toml").read_text())
            w = spec["workload"]
            ratio = r["real"] / r["median"]
            out.append({"campaign": v, "config": r["config"], "policy": r["what"], "metric": r["metric"],
                        "time_ratio": 1 / ratio if r["metric"] == "output_throughput" else ratio,
                        "faster_than_interval": (r["real"] < r["q05"]) if r["metric"] != "output_throughput"
                        else (r["real"] > r["q95"]),
                        "slower_than_interval": (r["real"] > r["q95"]) if r["metric"] != "output_throughput"
                        else (r["real"] < r["q05"]),
                        "input_len": w["input_len"], "concurrency": w["max_concurrency"],
                        "k": spec["speculative"]["num_speculative_tokens"],
                        "stream": w["request_rate"] != float("inf"), "inside": r["inside"]})
    return out


def summary(rs: list[dict]) -> dict:
    from scipy.stats import spearmanr

    res: dict = {}
    for m in TIMINGS:
        xs = [r for r in rs if r["metric"] == m]
        ratio = [r["time_ratio"] for r in xs]
        res[m] = {
            "n": len(xs), "median_time_ratio": statistics.median(ratio),
            "misses_faster": sum(r["faster_than_interval"] for r in xs),
            "misses_slower": sum(r["slower_than_interval"] for r in xs),
            "by_prompt_length": [{"from": lo, "to": hi, "n": len(b),
                                  "median_time_ratio": statistics.median(b)} for lo, hi in CTX_BINS
                                 for b in [[r["time_ratio"] for r in xs if lo <= r["input_len"] < hi]] if b],
            "spearman": {key: float(spearmanr(ratio, [float(r[key]) for r in xs]).statistic)
                         for key in ("input_len", "concurrency", "k")},
            "spearman_p": {key: float(spearmanr(ratio, [float(r[key]) for r in xs]).pvalue)
                           for key in ("input_len", "concurrency", "k")},
        }
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", nargs="+", default=["v14", "v15", "v16", "v17"])
    ap.add_argument("--write", type=Path)
    a = ap.parse_args()
    rs = rows(a.campaigns)
    res = summary(rs)
    for m, s in res.items():
        print(f"{m}: n {s['n']}, median real/predicted time {s['median_time_ratio']:.3f}, "
              f"misses faster {s['misses_faster']} / slower {s['misses_slower']}; rho with prompt length "
              f"{s['spearman']['input_len']:+.2f} (p {s['spearman_p']['input_len']:.4f}), concurrency "
              f"{s['spearman']['concurrency']:+.2f}, k {s['spearman']['k']:+.2f}")
        for b in s["by_prompt_length"]:
            print(f"  prompts {b['from']}-{b['to']}: n {b['n']:3d}  "
                  f"median time ratio {b['median_time_ratio']:.3f}")
    if a.write:
        from mtpsim.fileio import atomic_write_json

        atomic_write_json(a.write, {"command": "python benchmarks/timing_lean_by_shape.py --campaigns "
                                    + " ".join(a.campaigns), "summary": res, "rows": rs})


if __name__ == "__main__":
    main()
