"""What-if for the public corpus's k = 1 vs k = 0 pair: seeded `simulate` runs of both rows at the
experiments' defaults, with the ShareGPT lengths as drawn (lognormal, no bound) or redrawn until
they pass `vllm bench serve`'s ShareGPT filter (vllm/benchmarks/datasets/datasets.py
`is_valid_sequence`: 4 <= prompt <= 1,024, output >= 4, prompt + output <= 2,048). The filter is
applied by patching the simulator's length draw in this process only: a question for the
workload model, not a change to it.

    python benchmarks/kpair_length_filter_whatif.py {as-drawn|filtered} [section.key=value ...]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROWS = ("gpustack-h200-vllm-tp8-sharegpt", "gpustack-h200-vllm-tp8-mtp1-sharegpt")
KEYS = ("output_throughput", "median_tpot_ms", "median_itl_ms", "median_ttft_ms", "duration",
        "total_output_tokens")


class FilteredDraw:
    """draw_lengths redrawing what vLLM's filter drops: the simulator draws the prompts, then the
    outputs; each output is redrawn until it fits beside its prompt."""

    def __init__(self, orig) -> None:
        self.orig = orig
        self.prompts: np.ndarray | None = None

    def __call__(self, rng, n, mean, dist, spread):
        out = self.orig(rng, n, mean, dist, spread)
        if dist != "lognormal":
            return out
        prompts, self.prompts = self.prompts, None
        while (bad := self._bad(out, prompts)).any():
            out[bad] = self.orig(rng, int(bad.sum()), mean, dist, spread)
        if prompts is None:
            self.prompts = out
        return out

    @staticmethod
    def _bad(x: np.ndarray, prompts: np.ndarray | None) -> np.ndarray:
        if prompts is None:
            return (x > 1024) | (x < 4)
        return (x + prompts > 2048) | (x < 4)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("as-drawn", "filtered"):
        print("usage: kpair_length_filter_whatif.py {as-drawn|filtered} [section.key=value ...]",
              file=sys.stderr)
        return 2
    os.chdir(ROOT)
    import mtpsim.sim.simulator as sim
    from mtpsim.spec import load_experiment

    if argv[0] == "filtered":
        sim.draw_lengths = FilteredDraw(sim.draw_lengths)
    got = {}
    for rid in ROWS:
        exp = load_experiment(f"experiments/public/{rid}.toml", argv[1:])
        r = sim.simulate(exp, exp.policies[0] if exp.k else "no_mtp", records=False)
        got[rid] = {k: r.get(k) for k in KEYS}
        print(rid, {k: round(v, 1) for k, v in got[rid].items()})
    a, b = (got[r] for r in ROWS)
    print("k = 1 / k = 0:", {k: round(b[k] / a[k], 3) for k in KEYS})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
