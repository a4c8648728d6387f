"""Table titles built from the settings a run actually used (after `--set`), never from the
experiment file's free-text description, which an override can make wrong."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim.models.families.base import DENSE_TOPK

if TYPE_CHECKING:
    from mtpsim.spec import Experiment


def setup_title(exp: Experiment, how: str, own_model: str | None = None) -> str:
    """E.g. "pr47352: DeepSeek-V3.2-NVFP4 on 4 x B200 · 256 x 10,240 in / 2,048 out · conc 32 ·
    k=3 · top-2048 (simulated, seed 0)". `how` is the mode: "simulated", "reference", "vllm";
    `own_model` names the model an engine runs instead of the spec's (the reference engine)."""
    w = exp.workload
    if own_model:
        where = own_model
    else:
        # a --set of the preset alone leaves the file's checkpoint name behind: name the preset
        set_keys = {o.partition("=")[0].strip() for o in exp.overrides}
        stale = "model.preset" in set_keys and "model.name" not in set_keys
        model = ((None if stale else exp.model.name) or exp.model.preset or "model").split("/")[-1]
        e = exp.engine
        where = f"{model} on {e.dp * e.tp * e.pp} x {exp.hardware.name or exp.hardware.preset}"
        if e.dp > 1 or e.pp > 1:  # the layout, where TP alone does not say it
            where += (f" ({'DP' + str(e.dp) + ' x ' if e.dp > 1 else ''}TP{e.tp}"
                      f"{' x PP' + str(e.pp) if e.pp > 1 else ''}{', EP' if e.ep else ''})")
    rate = "" if math.isinf(w.request_rate) else f" · rate {w.request_rate:g}/s"
    name = Path(exp.source).stem if exp.source and exp.source != "<memory>" else ""
    # a dense family's top-k is DENSE_TOPK, larger than any context: name it for what it is
    attention = "dense" if exp.index_topk >= DENSE_TOPK else f"top-{exp.index_topk}"
    # unset: every request at once (vLLM bench's default), which "conc None" did not say
    conc = "no conc limit" if w.max_concurrency is None else f"conc {w.max_concurrency}"
    setup = (f"{where} · {w.num_prompts} x {w.input_len:,} in / {w.output_len:,} out · "
             f"{conc}{rate} · k={exp.k} · {attention}")
    draws = "expected acceptance" if exp.acceptance.mode == "expected" else f"seed {exp.seed}"
    return f"{name + ': ' if name else ''}{setup} ({how}, {draws})"
