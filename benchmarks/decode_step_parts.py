"""Where one decode-only engine step's time goes, by kernel group, for a public corpus row's
experiment at several batch sizes (the roofline at the experiment's defaults, deterministic): the
target's GEMMs, sparse MLA, indexer, the indexer's logits fill (vLLM before PR #33568), TP
all-reduces, elementwise passes, LM head, then the step's phases (sampling, host and launch
overhead).

    python benchmarks/decode_step_parts.py [ROW_ID] [--context 400] [--set section.key=value ...]

Default row: gpustack-h200-vllm-tp8-nodeepgemm-sharegpt (a TP8 training row)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

BATCHES = (1, 64, 256, 512, 1000)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("row", nargs="?", default="gpustack-h200-vllm-tp8-nodeepgemm-sharegpt")
    ap.add_argument("--context", type=float, default=400.0, help="tokens per request")
    ap.add_argument("--set", action="append", default=[], help="section.key=value override")
    a = ap.parse_args(argv)
    import mtpsim

    os.chdir(Path(mtpsim.__file__).resolve().parents[1])
    from mtpsim.models.cost import StepShape
    from mtpsim.models.roofline import CostModel
    from mtpsim.spec import load_experiment

    exp = load_experiment(f"experiments/public/{a.row}.toml", a.set)
    cm = CostModel(exp, "fresh" if exp.k else "no_mtp")
    st, q, ctx = cm._stack, exp.k + 1, a.context
    names = ("linear GEMMs", "MoE GEMMs", "sparse MLA", "indexer + top-k", "logits fill",
             "TP all-reduce", "elementwise", "LM head + sampling", "step total", "verify phase",
             "sampling phase", "overhead phase")
    print(f"{a.row}: one decode step, context {ctx:g} tokens per request, ms per GPU")
    print("| running requests | " + " | ".join(names) + " |")
    print("|" + " ---: |" * (len(names) + 1))
    for b in BATCHES:
        tok, keys = b * q, b * min(ctx, exp.index_topk)
        parts = (cm._gemms(tok, st.mla, st.dense, 0, st.indexer), cm._gemms(tok, 0, 0, st.moe, 0),
                 cm._attention(st.mla, q * keys, tok, q), cm._indexer(st.indexer, q * b * ctx, b * ctx),
                 cm._decode_clean(st.indexer, tok, q * b * ctx),
                 cm._allreduce(st.layers, tok, st.moe), cm._elementwise(st.layers, tok), cm._head(tok))
        s = StepShape(num_decode=b, decode_ctx=b * ctx, decode_keys=keys, num_draft=b,
                      draft_ctx=b * ctx, draft_keys=b * ctx)
        ph = {p: float(v) for p, v in cm.step(s).items()}
        cells = [*(float(v) for v in parts), sum(ph.values()), ph["verify"],
                 ph["rejection_sample"], ph["overhead"]]
        print(f"| {b:,} | " + " | ".join(f"{1e3 * v:.1f}" for v in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
