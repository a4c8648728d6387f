"""TensorRT-LLM tech blog 1's MTP-depth sweep (DeepSeek-R1 on 8 x B200, one request at a time, ISL
1k / OSL 2k): per-user output speed and acceptance length at k = 0..5, measured against mtpsim's
90 % intervals, and each k's speed-up over k = 0 on shared draws (issue #23's k = 0 vs k = 3
comparison). Rows `trtllm-blog1-b200-r1-tp8-c1-k<k>` of docs/data/public/rows.toml, experiments
written by `python benchmarks/public_corpus.py --write-experiments` (nothing tuned to the rows).

Every k runs the same draws of the priors (those of the k = 3 experiment; the acceptance prior is
inert at k = 0), so a ratio's interval is the spread of the per-draw ratio, not of two independent
runs. Per-user speed is trtllm-bench's generation tokens over generation time, 1,000 / TPOT at one
request at a time. Intervals are the 5 % and 95 % quantiles of the draws (no bootstrap).

    python benchmarks/kpair_trtllm_blog1.py [--draws 32] [--jobs 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROW = "trtllm-blog1-b200-r1-tp8-c1-k{k}"
KS = (0, 1, 2, 3, 4, 5)
# the blog's 'Autoregressive MTP Layers' table: k -> (TPS/User, acceptance rate = tokens per step)
MEASURED = {0: (111.0, 1.00), 1: (198.0, 1.92), 2: (250.0, 2.58), 3: (253.0, 2.82),
            4: (245.0, 2.99), 5: (239.0, 3.01)}


def _one(exps: dict, task: tuple) -> dict:
    from mtpsim.uncertainty.draws import run_draw

    k, draw = task
    res = next(iter(run_draw(exps[k], draw).values()))
    return {"speed": 1000.0 / res["mean_tpot_ms"], "al": res["spec_decode_acceptance_length"]}


def q(x: np.ndarray) -> dict:
    lo, med, hi = np.quantile(x, [0.05, 0.5, 0.95])
    return {"median": float(med), "lo": float(lo), "hi": float(hi)}


def main(argv: list[str] | None = None) -> int:
    from mtpsim.runs.executor import run_jobs
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.draws import plan

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=32)
    ap.add_argument("--jobs", "-j", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the per-k intervals here")
    a = ap.parse_args(argv)
    exps = {k: load_experiment(ROOT / "experiments" / "public" / f"{ROW.format(k=k)}.toml") for k in KS}
    draws = plan(exps[3], a.draws)
    tasks = [(k, d) for k in KS for d in draws]
    t0 = time.perf_counter()
    out = {k: {"speed": np.zeros(len(draws)), "al": np.zeros(len(draws))} for k in KS}
    for i, res in run_jobs(_one, tasks, exps, a.jobs, ordered=False):
        k, d = tasks[i]
        out[k]["speed"][d.index] = res["speed"]
        out[k]["al"][d.index] = res["al"]
    wall = time.perf_counter() - t0
    rows = []
    for k in KS:
        speed, al = MEASURED[k]
        r = {"k": k, "measured_speed": speed, "speed": q(out[k]["speed"]),
             "measured_ratio": speed / MEASURED[0][0],
             "ratio": q(out[k]["speed"] / out[0]["speed"]),
             "measured_al": al, "al": q(out[k]["al"])}
        rows.append(r)
    inside = lambda v, iv: iv["lo"] <= v <= iv["hi"]  # noqa: E731
    print(f"TensorRT-LLM blog 1, DeepSeek-R1 on 8 x B200, c = 1, ISL 1k / OSL 2k: {a.draws} shared "
          f"draws, 90 % intervals ({wall:.0f} s)")
    print("| k | TPS/User measured | mtpsim | speed-up over k = 0 measured | mtpsim (shared draws) "
          "| acceptance length measured | mtpsim |")
    print("| ---: | ---: | --- | ---: | --- | ---: | --- |")
    for r in rows:
        def iv(d: dict, f: str = ".0f") -> str:
            return f"{d['median']:{f}} [{d['lo']:{f}}, {d['hi']:{f}}]"
        mark = lambda v, d: "" if inside(v, d) else " (out)"  # noqa: E731
        speed = f"{iv(r['speed'])}{mark(r['measured_speed'], r['speed'])}"
        ratio = f"{iv(r['ratio'], '.3f')}{mark(r['measured_ratio'], r['ratio'])}"
        al = f"{iv(r['al'], '.2f')}{mark(r['measured_al'], r['al'])}"
        print(f"| {r['k']} | {r['measured_speed']:g} | {speed} | {r['measured_ratio']:.3f} | {ratio} "
              f"| {r['measured_al']:.2f} | {al} |")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"draws": a.draws, "wall_s": wall, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
