"""Development, post hoc on SEEN campaigns: where does the one-sided timing lean sit? (docs/uncertainty.md
§27). Every timing miss in v14-v17 was a run faster than its interval (median real over predicted
median TPOT 0.96); this reads the shipped scores (levels only, as scored: timings on the fit's unit
by each run's own dense level) and splits the real / predicted-median time ratio (TPOT as it is,
output throughput inverted, so < 1 means faster than predicted) by the configuration's prompt length,
concurrency and k, with Spearman's rho against each.

These campaigns' results have been read: nothing here is held out.

`--phases` also prices every decode-only step of the shipped test runs' traces with that campaign's
fit (mtpsim.models.fitted.FittedCost, as the simulator prices them), puts the measured phase times
on the fit's unit by each run's own dense level (as the score does), and prints measured over
predicted per phase, below 900 prompt tokens and from 1,200 on.

    python benchmarks/timing_lean_by_shape.py [--campaigns v14 v15 v16 v17] [--write FILE]
                                              [--phases v16 v17]
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


def phase_ratios(campaigns: list[str]) -> list[dict]:
    """Per shipped test run (configuration x policy): measured (on the fit's unit) and predicted
    seconds of its decode-only steps, per phase of the campaign's fit."""
    import gzip
    import tempfile

    import numpy as np

    from mtpsim.calibration import read_calibration
    from mtpsim.calibration.fit import step_quantities
    from mtpsim.level import figure, scaled
    from mtpsim.models.fitted import FittedCost
    from mtpsim.result import load_result
    from mtpsim.trace import read_trace

    out = []
    for v in campaigns:
        data = ROOT / "docs" / "data" / f"heldout-{v}"
        cal = read_calibration(data / "calibration-bootstrap.json")
        unit = float(cal.machine["normalised"]["unit_s"])
        for real in sorted(data.glob("*/real")):
            spec_path = ROOT / "experiments" / "heldout" / v / f"{real.parent.name}.toml"
            spec = tomllib.loads(spec_path.read_text())
            for pol in ("fresh", "share"):
                with tempfile.TemporaryDirectory() as tmp:
                    path = Path(tmp) / "t.jsonl"
                    path.write_bytes(gzip.decompress((real / f"{pol}.trace.jsonl.gz").read_bytes()))
                    tr = read_trace(path)
                q, _ = step_quantities(tr)
                priced = FittedCost(cal, pol, tr.num_speculative_tokens, tr.index_topk).priced(q)
                dec = np.asarray(q.prefill_done) == 0
                level = figure(load_result(real / f"{pol}.json").extra.level, "cpu")
                f = scaled(1.0, level, unit, rate=False)  # measured seconds -> the fit's unit
                row = {"campaign": v, "config": real.parent.name, "policy": pol,
                       "input_len": spec["workload"]["input_len"], "phases": {}}
                for ph in cal.cost.phases:
                    pred = float(np.broadcast_to(priced[ph], dec.shape)[dec].sum())
                    meas = f * float(np.array([s.phases[ph] for s in tr.steps])[dec].sum())
                    row["phases"][ph] = {"measured": meas, "predicted": pred}
                row["phases"]["decode steps"] = {k: sum(x[k] for x in row["phases"].values())
                                                 for k in ("measured", "predicted")}
                out.append(row)
    return out


def print_phases(rs: list[dict]) -> dict:
    res: dict = {}
    for pol in ("fresh", "share"):
        xs = [r for r in rs if r["policy"] == pol]
        for ph in xs[0]["phases"] if xs else ():
            pairs = [(r["input_len"], r["phases"][ph]) for r in xs if r["phases"][ph]["predicted"] > 0]
            if not pairs:
                continue
            ratio = [(L, d["measured"] / d["predicted"]) for L, d in pairs]
            short = statistics.median(x for L, x in ratio if L < 900)
            long = statistics.median(x for L, x in ratio if L >= 1200)
            res.setdefault(pol, {})[ph] = {"median": statistics.median(x for _, x in ratio),
                                           "below_900": short, "from_1200": long, "n": len(ratio)}
            print(f"{pol:5s} {ph:22s} measured / predicted: median {res[pol][ph]['median']:.3f}, "
                  f"< 900 tokens {short:.3f}, >= 1,200 {long:.3f} ({len(ratio)} runs)")
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", nargs="+", default=["v14", "v15", "v16", "v17"])
    ap.add_argument("--write", type=Path)
    ap.add_argument("--phases", nargs="*", default=[], help="campaigns whose traces to price by phase")
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
    phases = print_phases(phase_ratios(a.phases)) if a.phases else None
    if a.write:
        from mtpsim.fileio import atomic_write_json

        cmd = "python benchmarks/timing_lean_by_shape.py --campaigns " + " ".join(a.campaigns)
        atomic_write_json(a.write, {"command": cmd + (" --phases " + " ".join(a.phases) if a.phases else ""),
                                    "summary": res, "rows": rs, "decode_step_phases": phases})


if __name__ == "__main__":
    main()
