"""Print the docs/reference-engine.md record row of trained weights, from their JSON sidecar.

    python experiments/reference_record.py mtpsim/engine/weights/reference-small.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _pair(d: dict[str, float]) -> str:
    return f"{d['main']:.3f} / {d['mtp']:.3f}"


def row(meta: dict[str, Any]) -> str:
    """Sidecars from before `--size` existed hold the base model."""
    cfg, ph = meta["config"], meta["phases"]
    last = list(ph.values())[-1]
    top = f"top{cfg['index_topk']}"
    long = meta.get("held_out_long")
    long_cell = "-" if long is None else (
        f"{_pair(long['dense'])} ({top}: {_pair(long[top])}), {long['windows']} x {long['context']:,}")
    phases = ", ".join(f"{k} {v['minutes']:.0f} min @ {v['context']:,}" for k, v in ph.items())
    arch = f"{cfg['n_layer']} x d{cfg['dim']}, {cfg['n_head']} heads, RoPE {cfg['max_seq_len']:,}"
    return (f"| {meta.get('size', 'base')} | {arch} | {meta['params'] / 1e6:.2f} M | "
            f"{meta['minutes']:.0f} ({phases}) | {meta['tokens'] / 1e6:.2f} M | "
            f"{_pair(last['held_out_dense'])} | {_pair(last['held_out_' + top])} | {long_cell} |")


if __name__ == "__main__":
    print(row(json.loads(Path(sys.argv[1]).read_text())))
