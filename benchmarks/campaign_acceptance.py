"""Campaign, part 2: per-position acceptance of each top-k reuse policy on the reference engine,
with request-level 95% CIs, at temperature 1.0 and 0, for one model size and several contexts.

Every policy serves the same requests (held-out windows of `context` tokens as prompts, fixed
per-request seeds). A request's drafts are its units: the CI of a policy's position-i rate and of
its difference from `fresh` (paired by request) is a percentile bootstrap over requests.

    python benchmarks/campaign_acceptance.py --weights base --contexts 1024 4096 \\
        --requests 16 --output-len 64 --out docs/campaign/base

Writes OUT/acceptance.json (per-request counters per cell; a rerun skips the cells already there)
and OUT/acceptance.md (table).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mtpsim.engine import weights
from mtpsim.engine.corpus import joined
from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
from mtpsim.engine.model import Transformer
from mtpsim.fileio import atomic_write_json, atomic_write_text

POLICIES = ("fresh", "share", "share_recent", "target_share")


@torch.inference_mode()
def serve(model: Transformer, policy: str, prompts: list[list[int]], out_len: int, k: int, topk: int,
          temperature: float, batch: int, seed: int) -> list[dict[str, Any]]:
    """-> per request: drafts and accepted tokens per position."""
    engine = SpecDecodeEngine(model, EngineConfig(
        num_speculative_tokens=k, index_topk=topk, max_num_seqs=batch,
        max_model_len=max(map(len, prompts)) + out_len, policy=policy))
    for i, p in enumerate(prompts):
        engine.add_request(str(i), p, out_len, temperature, ignore_eos=True, seed=seed * 7919 + i)
    rec: dict[str, dict[str, Any]] = {}
    while engine.has_unfinished():
        for o in engine.step():
            if o.finished and o.counters is not None:
                rec[o.request_id] = {"drafts": o.counters.num_drafts,
                                     "accepted_per_pos": list(o.counters.accepted_per_pos)}
    return [rec[str(i)] for i in range(len(prompts))]


def rates_ci(reqs: list[dict[str, Any]], base: list[dict[str, Any]] | None, k: int,
             n: int = 2000, seed: int = 0) -> list[dict[str, float]]:
    """Per position: rate (%) with its 95% CI, and (if base) the paired difference with its CI."""
    d = np.array([r["drafts"] for r in reqs], float)
    acc = np.array([r["accepted_per_pos"][:k] for r in reqs], float)  # [N, k]
    g = np.random.default_rng(seed)
    idx = g.integers(0, len(reqs), (n, len(reqs)))
    out = []
    for i in range(k):
        rate = 100 * acc[:, i].sum() / d.sum()
        boot = 100 * acc[idx, i].sum(1) / d[idx].sum(1)
        row = {"pos": i + 1, "rate": round(rate, 2), "lo": round(float(np.percentile(boot, 2.5)), 2),
               "hi": round(float(np.percentile(boot, 97.5)), 2)}
        if base is not None:
            bd = np.array([r["drafts"] for r in base], float)
            ba = np.array([r["accepted_per_pos"][i] for r in base], float)
            diff = rate - 100 * ba.sum() / bd.sum()
            bdiff = boot - 100 * ba[idx].sum(1) / bd[idx].sum(1)
            row |= {"diff": round(diff, 2), "diff_lo": round(float(np.percentile(bdiff, 2.5)), 2),
                    "diff_hi": round(float(np.percentile(bdiff, 97.5)), 2)}
        out.append(row)
    return out


def summarize(cells: dict[str, list[dict[str, Any]]], k: int) -> list[dict[str, Any]]:
    rows = []
    for key, reqs in sorted(cells.items()):
        ctx, temp, policy = key.split("|")
        base = cells.get(f"{ctx}|{temp}|fresh") if policy != "fresh" else None
        rows.append({"context": int(ctx), "temperature": float(temp), "policy": policy,
                     "requests": len(reqs), "positions": rates_ci(reqs, base, k)})
    return rows


def table(summary: list[dict[str, Any]], label: str) -> str:
    k = len(summary[0]["positions"])
    lines = [f"Per-position acceptance (%) with request-level 95% CIs; in brackets below each "
             f"non-fresh rate: its paired difference from fresh (pp) ({label}).", "",
             "| context | T | policy | requests | " + " | ".join(f"pos {i + 1}" for i in range(k)) + " |",
             "|" + "---|" * (4 + k)]
    for r in summary:
        cells = []
        for p in r["positions"]:
            c = f"{p['rate']:.1f} [{p['lo']:.1f}, {p['hi']:.1f}]"
            if "diff" in p:
                c += f"<br>Δ {p['diff']:+.1f} [{p['diff_lo']:+.1f}, {p['diff_hi']:+.1f}]"
            cells.append(c)
        lines.append(f"| {r['context']} | {r['temperature']:g} | `{r['policy']}` | {r['requests']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", default="base", help="a shipped size (small, base, large) or a path")
    ap.add_argument("--contexts", type=int, nargs="+", default=[1024, 4096])
    ap.add_argument("--temperatures", type=float, nargs="+", default=[1.0, 0.0])
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8, help="requests served at once")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--topk", type=int, default=0, help="0: the weights' own")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = weights.load(weights.resolve(a.weights))
    topk = a.topk or model.args.index_topk
    if max(a.contexts) + a.output_len + a.k + 1 > model.args.max_seq_len:
        ap.error(f"--contexts: at most {model.args.max_seq_len - a.output_len - a.k - 1} with these "
                 "weights and --output-len")
    held = joined(held_out=True)
    args = {"weights": a.weights, "requests": a.requests, "output_len": a.output_len, "k": a.k,
            "topk": topk, "seed": a.seed, "params": sum(p.numel() for p in model.parameters())}
    path = a.out / "acceptance.json"
    store = json.loads(path.read_text()) if path.exists() else {}
    if store.get("args") != args:
        store = {"args": args, "cells": {}}
    for ctx in a.contexts:
        stride = (len(held) - ctx) // a.requests
        prompts = [list(held[i * stride:i * stride + ctx]) for i in range(a.requests)]
        for temp in a.temperatures:
            for policy in ["fresh", *[p for p in a.policies if p != "fresh"]]:
                key = f"{ctx}|{temp:g}|{policy}"
                if key in store["cells"]:
                    continue
                store["cells"][key] = serve(model, policy, prompts, a.output_len, a.k, topk, temp,
                                            a.batch, a.seed)
                atomic_write_json(path, store)
                print(f"{key} done", flush=True)
    store["summary"] = summarize(store["cells"], a.k)
    atomic_write_json(path, store)
    label = (f"{a.weights}, {args['params'] / 1e6:.2f} M parameters, top-{topk}, k {a.k}, "
             f"{a.output_len} output tokens per request")
    atomic_write_text(a.out / "acceptance.md", table(store["summary"], label))
    print(table(store["summary"], label))


if __name__ == "__main__":
    main()
