"""One decode-only engine step of the public corpus's k = 1 vs k = 0 pair (8 x H200 TP8, vLLM
0.13.0, ShareGPT) at several batch sizes, priced by the roofline at the experiments' defaults:
total ms, the sampling phase and the overhead (host work, eager steps), and k = 1 over k = 0.

    python benchmarks/kpair_steps.py [--set section.key=value ...]

With PYTHONPATH at another checkout it prices the same steps with that checkout's code and its
own experiments/public files."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ROWS = ("gpustack-h200-vllm-tp8-sharegpt", "gpustack-h200-vllm-tp8-mtp1-sharegpt")
BATCHES = (64, 256, 300, 512, 1000)
CONTEXT = 400.0  # tokens per request: a ShareGPT prompt and part of its answer


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", default=[], help="section.key=value override")
    a = ap.parse_args(argv)
    import mtpsim

    os.chdir(Path(mtpsim.__file__).resolve().parents[1])  # the checkout whose code runs
    from mtpsim.models.cost import StepShape
    from mtpsim.models.roofline import CostModel
    from mtpsim.spec import load_experiment

    ms: dict[tuple[int, int], dict[str, float]] = {}
    for rid in ROWS:
        exp = load_experiment(f"experiments/public/{rid}.toml", a.set)
        cm = CostModel(exp, "fresh" if exp.k else "no_mtp")
        for b in BATCHES:
            s = StepShape(num_decode=b, decode_ctx=b * CONTEXT, decode_keys=b * CONTEXT, num_draft=b,
                          draft_ctx=b * CONTEXT, draft_keys=b * CONTEXT)
            ms[exp.k, b] = {p: float(v) * 1e3 for p, v in cm.step(s).items()}
    print("| running requests | k = 0 ms (sampling, overhead) | k = 1 ms (sampling, overhead) | k1 / k0 |")
    print("| ---: | ---: | ---: | ---: |")
    for b in BATCHES:
        z, o = ms[0, b], ms[1, b]
        print(f"| {b:,} | {sum(z.values()):.1f} ({z['rejection_sample']:.1f}, {z['overhead']:.1f}) | "
              f"{sum(o.values()):.1f} ({o['rejection_sample']:.1f}, {o['overhead']:.1f}) | "
              f"{sum(o.values()) / sum(z.values()):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
