"""Prefill tokens/s of one 8,192-token step made of whole prompts of L tokens (8,192 / L of them,
each from position 0) on the GPUStack 8 x H200 TP8 row's experiment (vLLM 0.13.0's settings), with
FlashMLA multiplying the full top-k width (engine.sparse_topk_length = false, vLLM before PR
#36616), without (topk_length, before PR #47327), and with prompts within top-k run as dense MHA
(engine.dense_short_prefill, vLLM 0.33.0), at the priors' centres. Deterministic; prints a
Markdown table.

    python benchmarks/prefill_chunk_rates.py
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mtpsim.models.cost import StepShape
from mtpsim.models.roofline import CostModel
from mtpsim.spec import load_experiment

EXPERIMENT = "experiments/public/gpustack-h200-vllm-tp8-random2000x100.toml"
LENGTHS = (128, 512, 2000, 4000, 8192)


# (engine.sparse_topk_length, engine.dense_short_prefill): vLLM 0.13.0, after PR #36616, 0.33.0
SETTINGS = ((False, False), (True, False), (True, True))


def step_ms(exp, shape: StepShape, topk_length: bool, dense: bool) -> float:
    e = dataclasses.replace(exp, engine=dataclasses.replace(
        exp.engine, sparse_topk_length=topk_length, dense_short_prefill=dense))
    return 1e3 * float(sum(v[0] for v in CostModel(e, "fresh").step(shape).values()))


def main() -> None:
    exp = load_experiment(EXPERIMENT)
    tk = exp.index_topk
    print("| prompt tokens L | prompts per step | step ms, full width (0.13.0) | tokens/s "
          "| step ms, topk_length | tokens/s | step ms, + dense MHA within top-k (0.33.0) "
          "| tokens/s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for length in LENGTHS:
        n = 8192 // length
        shape = StepShape(prefill_tokens=np.array([n * length]),
                          prefill_keys=np.array([float(n * sum(min(p + 1, tk) for p in range(length)))]),
                          prefill_pairs=np.array([n * length * (length + 1) / 2]),
                          prefill_reads=np.array([float(n * length)]), prefill_done=np.array([n]))
        cells = [f"{length:,}", f"{n}"]
        for topk_length, dense in SETTINGS:
            ms = step_ms(exp, shape, topk_length, dense)
            cells += [f"{ms:.0f}", f"{n * length / ms * 1e3:,.0f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
