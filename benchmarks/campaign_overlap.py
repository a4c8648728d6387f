"""Campaign, part 1: how much of the fresh top-k row the reused one still covers, per MTP draft
step, against context L and top-k K (L/K from 1 to 64), for one model size.

Method. Held-out windows are prefilled by the target (top-`--engine-topk` sparse attention, the
model's own) and the MTP layer runs draft step 0 over every row, as the engine's draft prefill
does. At sample positions p near each context L (context = p + 1), draft steps 1..k-1 then run
from p under `fresh` (drafts sampled at `--temperature`), and the MTP indexer's score rows are
kept: the step-0 row at p (what `share` reuses) and the fresh row at p + s. For every K the
overlap is |topK(row_p) ∩ topK(row_p+s)| / |topK(row_p+s)| (as the engine's trace defines it),
and `mass` the fraction of the fresh top-K's indexer softmax weight that the reused set holds.
K varies at the selection only: the hidden states come from the run at the engine's top-k.
After each p the positions the draft steps wrote are rewritten from the verified text (as the
next draft prefill would), so later positions see clean caches. One window is one "request":
CIs are bootstrap over windows.

    python benchmarks/campaign_overlap.py --weights base --contexts 512 1024 2048 4096 8188 \\
        --windows 6 --positions 4 --out docs/campaign/base

Writes OUT/overlap.json (every window's measurements; a rerun skips windows already there) and
OUT/overlap.md (table). benchmarks/campaign_plots.py draws every size's curves in one PNG.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from mtpsim.engine import weights
from mtpsim.engine.corpus import joined
from mtpsim.engine.engine import PREFILL_ROW_KEYS
from mtpsim.engine.indexer import select_topk
from mtpsim.engine.model import Transformer
from mtpsim.engine.sampling import sample
from mtpsim.fileio import atomic_write_json, atomic_write_text

RATIOS = (1, 2, 4, 8, 16, 32, 64)


def overlap_and_mass(reused: Tensor, fresh: Tensor, topk: int) -> tuple[float, float]:
    """reused/fresh: 1-D score rows (-inf beyond each query) -> (set overlap, retained mass)."""
    r = select_topk(reused[None, None], topk)[0, 0]
    f = select_topk(fresh[None, None], topk)[0, 0]
    r, f = r[r >= 0], f[f >= 0]
    hit = torch.isin(f, r)
    w = torch.softmax(fresh.double(), -1)
    return float(hit.float().mean()), float(w[r[r < w.numel()]].sum() / w[f].sum())


def sample_positions(contexts: list[int], per_context: int, spread: int) -> dict[int, int]:
    """position -> its context bin: `per_context` positions ending at each context, `spread` apart."""
    return {L - 1 - j * spread: L for L in contexts for j in range(per_context)}


@torch.inference_mode()
def measure_window(model: Transformer, tokens: list[int], where: dict[int, int], k: int,
                   engine_topk: int, temperature: float, seed: int) -> list[dict[str, Any]]:
    """One window: rows {context, position, step, K, overlap, mass} for every sample position."""
    W = max(where) + k + 1
    assert len(tokens) >= W + 1
    model.setup_caches(1, W, engine_topk)
    mtp_att = model.mtp.block.attention
    slots = torch.zeros(1, dtype=torch.long)
    tok = torch.tensor([tokens[:W + 1]])
    pos = torch.arange(W)[None]
    chunk = max(1, PREFILL_ROW_KEYS // engine_topk)
    hidden = torch.cat([model(tok[:, a:min(W, a + chunk)], pos[:, a:a + chunk], slots, engine_topk)[1]
                        for a in range(0, W, chunk)], dim=1)  # [1, W, dim]
    rows: dict[int, Tensor] = {}

    def keep(scores: Tensor, input_pos: Tensor) -> None:
        for j, q in enumerate(input_pos[0].tolist()):
            if q in want:
                rows[q] = scores[0, j, :q + 1].clone()

    mtp_att.on_scores = keep
    try:
        want: set[int] = set(where)
        step0: dict[int, tuple[Tensor, Tensor]] = {}
        for a in range(0, W - 1, chunk):
            b = min(W - 1, a + chunk)
            lg, h = model.draft(tok[:, a + 1:b + 1], hidden[:, a:b], pos[:, a:b], slots, engine_topk)
            for p in where:
                if a <= p < b:
                    step0[p] = (lg[0, p - a], h[0, p - a])
        reused = {p: rows[p] for p in where}
        gen = torch.Generator().manual_seed(seed)
        out: list[dict[str, Any]] = []
        for p in sorted(where):
            lg, h = step0[p]
            for s in range(1, k):
                want, rows = {p + s}, {}
                d = sample(lg, temperature, gen)
                lg, h = model.draft(torch.tensor([[d]]), h[None, None], torch.tensor([[p + s]]), slots,
                                    engine_topk)
                lg, h = lg[0, 0], h[0, 0]
                L = where[p]
                for r in RATIOS:
                    K = max(1, L // r)
                    ov, mass = overlap_and_mass(reused[p], rows[p + s], K)
                    out.append({"context": L, "position": p, "step": s, "ratio": r, "topk": K,
                                "overlap": round(ov, 5), "mass": round(mass, 5)})
            want = set()  # rewrite the drafted positions from the verified text (the next draft prefill)
            model.draft(tok[:, p + 2:p + k + 1], hidden[:, p + 1:p + k], pos[:, p + 1:p + k], slots,
                        engine_topk)
        return out
    finally:
        mtp_att.on_scores = None


def bootstrap_ci(per_window: np.ndarray, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile CI of the mean over windows."""
    if len(per_window) < 2:
        return float("nan"), float("nan")
    g = np.random.default_rng(seed)
    means = per_window[g.integers(0, len(per_window), (n, len(per_window)))].mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def summarize(windows: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Mean overlap and mass per (context, ratio, step) with window-level CIs."""
    keys = sorted({(r["context"], r["ratio"], r["step"], r["topk"]) for w in windows for r in w})
    out = []
    for L, ratio, s, K in keys:
        cell = (L, ratio, s)
        per = {m: np.array([np.mean([r[m] for r in w if (r["context"], r["ratio"], r["step"]) == cell])
                            for w in windows]) for m in ("overlap", "mass")}
        row: dict[str, Any] = {"context": L, "ratio": ratio, "topk": K, "step": s, "windows": len(windows)}
        for m, v in per.items():
            lo, hi = bootstrap_ci(v)
            row |= {m: round(float(v.mean()), 4), f"{m}_lo": round(lo, 4), f"{m}_hi": round(hi, 4)}
        out.append(row)
    return out


def table(summary: list[dict[str, Any]], label: str) -> str:
    steps = sorted({r["step"] for r in summary})
    head = "| context L | L/K | K | " + " | ".join(f"overlap step {s} [95% CI]" for s in steps) + \
        " | " + " | ".join(f"mass step {s}" for s in steps) + " |"
    lines = [f"Top-k overlap of the reused step-0 row with the fresh row ({label}).", "", head,
             "|" + "---|" * (3 + 2 * len(steps))]
    by = {(r["context"], r["ratio"], r["step"]): r for r in summary}
    for L, ratio in sorted({(r["context"], r["ratio"]) for r in summary}):
        cells = [by[(L, ratio, s)] for s in steps]
        lines.append(f"| {L} | {ratio} | {cells[0]['topk']} | " + " | ".join(
            f"{c['overlap']:.3f} [{c['overlap_lo']:.3f}, {c['overlap_hi']:.3f}]" for c in cells) + " | " +
            " | ".join(f"{c['mass']:.3f}" for c in cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", default="base", help="a shipped size (small, base, large) or a path")
    ap.add_argument("--contexts", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8188])
    ap.add_argument("--windows", type=int, default=6, help="held-out windows (the CI's unit)")
    ap.add_argument("--positions", type=int, default=4, help="sample positions per context and window")
    ap.add_argument("--spread", type=int, default=37, help="tokens between sample positions")
    ap.add_argument("--k", type=int, default=3, help="draft steps (overlap at steps 1..k-1)")
    ap.add_argument("--engine-topk", type=int, default=0, help="top-k of the run (0: the weights' own)")
    ap.add_argument("--temperature", type=float, default=1.0, help="of the drafted tokens")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = weights.load(weights.resolve(a.weights))
    topk = a.engine_topk or model.args.index_topk
    where = sample_positions(sorted(a.contexts), a.positions, a.spread)
    if min(where) < 1 or max(where) + a.k + 1 > model.args.max_seq_len:
        ap.error(f"--contexts: each within [{a.positions * a.spread + 1}, "
                 f"{model.args.max_seq_len - a.k}] for these weights and --positions/--spread")
    held = joined(held_out=True)
    need = max(where) + a.k + 2
    stride = (len(held) - need) // a.windows
    args = {"weights": a.weights, "contexts": sorted(a.contexts), "positions": a.positions,
            "spread": a.spread, "k": a.k, "engine_topk": topk, "temperature": a.temperature, "seed": a.seed,
            "params": sum(p.numel() for p in model.parameters())}
    path = a.out / "overlap.json"
    store = json.loads(path.read_text()) if path.exists() else {}
    if store.get("args") != args:
        store = {"args": args, "windows": {}}
    for w in range(a.windows):
        if str(w) in store["windows"]:
            continue
        toks = list(held[w * stride:w * stride + need])
        store["windows"][str(w)] = measure_window(model, toks, where, a.k, topk, a.temperature, a.seed + w)
        store["summary"] = summarize(list(store["windows"].values()))
        atomic_write_json(path, store)
        print(f"window {w + 1}/{a.windows} done", flush=True)
    summary = summarize([store["windows"][str(w)] for w in range(a.windows)])
    store["summary"] = summary
    atomic_write_json(path, store)
    label = (f"{a.weights}, {args['params'] / 1e6:.2f} M parameters, engine top-{topk}, k {a.k}, "
             f"{a.windows} windows x {a.positions} positions, drafts at T={a.temperature}")
    atomic_write_text(a.out / "overlap.md", table(summary, label))
    print(table(summary, label))


if __name__ == "__main__":
    main()
