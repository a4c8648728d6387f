"""How the reference engine's step time depends on top-k (CPU, 1 torch thread).

Four requests of 600 held-out tokens, k = 3, fresh policy; for each top-k: the prefill of the
four prompts (target + draft step 0) and the median decode step (verify + drafts) with all four
running, median of 3 repetitions. The trace calibration prices per-row work per attended key
(mtpsim/models/cost.py); this is the measurement behind that choice.
Run: python benchmarks/bench_reference_topk_cost.py [--weights PATH] [--topk 32 64 128]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    ap.add_argument("--topk", type=int, nargs="+", default=[32, 64, 128])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    from mtpsim.engine import weights
    from mtpsim.engine.corpus import joined
    from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine

    model = weights.load(args.weights)
    held = joined(held_out=True)
    out: dict[int, list[tuple[float, float]]] = {}
    for _ in range(args.reps):
        for topk in args.topk:
            eng = SpecDecodeEngine(model, EngineConfig(3, topk, max_num_seqs=4, max_model_len=1000,
                                                       policy="fresh", trace=True), seed=0)
            for i in range(4):
                eng.add_request(str(i), list(held[i * 5000:i * 5000 + 600]), 40, 1.0, True, seed=i)
            while eng.has_unfinished():
                eng.step()
            steps = eng.trace.steps
            pre = next(s for s in steps if s.num_prefills == 4)
            dec = [sum(s.phases.values()) for s in steps if s.num_prefills == 0 and s.num_reqs == 4]
            out.setdefault(topk, []).append((pre.phases["prefill"] + pre.phases["draft_prefill"],
                                             float(np.median(dec))))
    base = min(args.topk)
    p0 = float(np.median([p for p, _ in out[base]]))
    print(f"{'top-k':>6} {'prefill 4x600 (s)':>18} {'x vs top-' + str(base):>12} {'decode step (ms)':>17}")
    for topk in args.topk:
        p = float(np.median([x for x, _ in out[topk]]))
        d = float(np.median([x for _, x in out[topk]]))
        print(f"{topk:>6} {p:>18.2f} {p / p0:>12.2f} {1e3 * d:>17.1f}")


if __name__ == "__main__":
    main()
