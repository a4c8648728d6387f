"""The vLLM blog's concurrency-1 pair on one 8 x B300 node (TP8): 125 tok/s without MTP, 234 with
MTP k = 1 ("~90% draft acceptance rate"), rows `vllm-blog-aa-b300-tp8-c1` and `-mtp1-c1` of
docs/data/public/rows.toml, against `mtpsim advise` on shared draws (k = 1 vs plain decoding).

The source does not state the prompt and output lengths, the weights or the sampling, so each
is spanned over a grid of what a reader could assume (FP8 or NVFP4 weights; 1,024- or 8,192-token
prompts; temperature 1.0, the model card's, or 0), 1,024-token answers, each cell its own advise
run at --draws 64 (its own seed-0 draws). The blog's tok/s is one user's output speed; advise's
output throughput at concurrency 1 also counts the time to the first token, so the k = 1 / k = 0
ratio of output speeds is compared with advise's gain against no MTP, and each row's speed with
1,000 / median TPOT.

    python benchmarks/kpair_b300_c1.py [--draws 64] [--json OUT]
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

MEASURED = {"k0_tok_s": 125.0, "k1_tok_s": 234.0}  # the blog's figures
GRID = {"quantization": ("fp8", "nvfp4"), "prompt": (1024, 8192), "temperature": (1.0, 0.0)}
DEPLOYMENT = """description = "what-if: the vLLM blog's 8 x B300 TP8 node, one request at a time"
seed = 0
[deployment]
model = "deepseek-v3.2"
gpu = "b300"
tp = 8
quantization = "{quantization}"
[workload]
context_lengths = [{prompt}]
context_weights = [1.0]
concurrency = [1]
output_len = 1024
temperature = {temperature}
[advise]
k = [1]
policies = ["fresh"]
draws = {draws}
"""


def cell(quantization: str, prompt: int, temperature: float, draws: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        dep = Path(tmp, "b300-c1.toml")
        dep.write_text(DEPLOYMENT.format(quantization=quantization, prompt=prompt,
                                         temperature=temperature, draws=draws))
        out = subprocess.run([sys.executable, "-m", "mtpsim", "advise", str(dep), "--json", "-j", "1",
                              "--draws", str(draws), "--point-dir", tmp],
                             capture_output=True, text=True, check=True)
    rows = {r["k"]: r for r in json.loads(out.stdout)["rows"]}
    speed = {k: {e: 1000.0 / rows[k]["median_tpot_ms"][f] for e, f in (("median", "median"),
                                                                      ("lo", "hi"), ("hi", "lo"))}
             for k in (0, 1)}
    return {"quantization": quantization, "prompt": prompt, "temperature": temperature,
            "k0_tok_s": speed[0], "k1_tok_s": speed[1], "gain_pct": rows[1]["gain_vs_no_mtp_pct"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=64)
    ap.add_argument("--json", type=Path, help="write the cells here")
    a = ap.parse_args(argv)
    cells = [cell(q, p, t, a.draws) for q, p, t in itertools.product(*GRID.values())]
    ratio = MEASURED["k1_tok_s"] / MEASURED["k0_tok_s"]
    print(f"measured: k = 0 {MEASURED['k0_tok_s']:g} tok/s, k = 1 {MEASURED['k1_tok_s']:g} tok/s, "
          f"ratio {ratio:.3f} (+{100 * (ratio - 1):.1f} %)")
    print("| weights | prompt | temperature | k = 0 tok/s | k = 1 tok/s | k = 1 vs k = 0 (advise) "
          "| measured inside |")
    print("| --- | ---: | ---: | --- | --- | --- | --- |")
    for c in cells:
        def iv(d: dict, pct: bool = False) -> str:
            s = "+" if pct else ""
            return f"{d['median']:{s}.0f} [{d['lo']:{s}.0f}, {d['hi']:{s}.0f}]" + (" %" if pct else "")
        inside = [c["k0_tok_s"]["lo"] <= MEASURED["k0_tok_s"] <= c["k0_tok_s"]["hi"],
                  c["k1_tok_s"]["lo"] <= MEASURED["k1_tok_s"] <= c["k1_tok_s"]["hi"],
                  c["gain_pct"]["lo"] <= 100 * (ratio - 1) <= c["gain_pct"]["hi"]]
        print(f"| {c['quantization']} | {c['prompt']:,} | {c['temperature']:g} | {iv(c['k0_tok_s'])} | "
              f"{iv(c['k1_tok_s'])} | {iv(c['gain_pct'], True)} | "
              f"{' / '.join('yes' if x else 'no' for x in inside)} |")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        out = {"measured": MEASURED, "draws": a.draws, "cells": cells}
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
