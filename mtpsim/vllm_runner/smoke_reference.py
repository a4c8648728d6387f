"""The reference engine's part of the first GPU hour: a lossless check and per-phase timings at
long contexts, under `fresh` and `share`, on whatever device is given.

    python -m mtpsim.vllm_runner.smoke_reference --device cuda --contexts 8192 32768 65536 \
        --topk 2048 --out OUT/reference

A random-init model (the shipped weights' RoPE table stops at 8 K), seeded so both policies run
the same weights and prompts; timings of a random model are the engine's cost, not text's.
Lossless: at temperature 0 speculative decoding emits the target's greedy tokens whatever the
drafts were, so `fresh` and `share` must emit the same tokens. Phase times are medians over
pure decode steps (no prefill in the step), from the engine's own trace. Each context is written
as soon as it is done (atomically), so a run cut short still leaves what it measured; a context
the device has no memory for is recorded as skipped.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

POLICIES = ("fresh", "share")
DECODE_PHASES = ("verify", "draft_prefill", "draft_decode_indexer", "draft_decode_rest")


def run_one(ctx: int, policy: str, *, device: str, topk: int, k: int, batch: int,
            out_len: int, seed: int) -> dict[str, Any]:
    import torch

    from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
    from mtpsim.engine.model import ModelArgs, PhaseTimer, Transformer

    max_len = ctx + out_len
    torch.manual_seed(seed)
    model = Transformer(ModelArgs(index_topk=topk, max_seq_len=max_len + k + 2)).eval()
    model = model.to(device)
    timer = PhaseTimer("wall")
    model.use_timer(timer)
    cfg = EngineConfig(num_speculative_tokens=k, index_topk=topk, max_num_seqs=batch,
                       max_model_len=max_len, policy=policy, trace=True)
    engine = SpecDecodeEngine(model, cfg, seed=seed, timer=timer)
    gen = torch.Generator().manual_seed(seed)
    for i in range(batch):
        prompt = torch.randint(1, model.args.vocab_size, (ctx,), generator=gen).tolist()
        engine.add_request(str(i), prompt, out_len, temperature=0.0, ignore_eos=True)
    tokens: dict[str, list[int]] = {str(i): [] for i in range(batch)}
    t0 = time.perf_counter()
    while engine.has_unfinished():
        for o in engine.step():
            tokens[o.request_id].extend(o.new_token_ids)
    wall = time.perf_counter() - t0
    decode = [s for s in engine.trace.steps if s.num_prefills == 0 and s.num_reqs > 0]
    phases = {p: round(1e3 * statistics.median(s.phases[p] for s in decode), 4)
              for p in DECODE_PHASES} if decode else {}
    stats = engine.stats
    return {"tokens": tokens, "wall_s": round(wall, 3), "decode_steps": len(decode),
            "phases_ms": phases,
            "acceptance_length": round(1 + stats.num_accepted_tokens / stats.num_drafts, 4)
            if stats.num_drafts else None}


def run_context(ctx: int, a: argparse.Namespace) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {"context": ctx, "topk": a.topk, "k": a.k, "batch": a.batch,
                           "output_len": a.out_len}
    runs = {}
    for policy in POLICIES:
        try:
            runs[policy] = run_one(ctx, policy, device=a.device, topk=a.topk, k=a.k,
                                   batch=a.batch, out_len=a.out_len, seed=a.seed)
        except torch.OutOfMemoryError as e:
            out["skipped"] = f"{policy}: out of device memory ({str(e).splitlines()[0]})"
            return out
        finally:
            if a.device.startswith("cuda"):
                torch.cuda.empty_cache()
    same = runs["fresh"]["tokens"] == runs["share"]["tokens"]
    out["lossless"] = {"ok": same, "detail": "fresh and share emitted the same greedy tokens"
                       if same else "fresh and share emitted different tokens at temperature 0"}
    for policy, r in runs.items():
        out[policy] = {key: v for key, v in r.items() if key != "tokens"}
    return out


def _line(r: dict[str, Any]) -> str:
    if "skipped" in r:
        return f"{r['context']:>7}  skipped: {r['skipped']}"
    f, s = r["fresh"]["phases_ms"], r["share"]["phases_ms"]
    idx = (f"{f.get('draft_decode_indexer', 0):.3f}/{s.get('draft_decode_indexer', 0):.3f}"
           if f and s else "-")
    return (f"{r['context']:>7}  lossless {'OK' if r['lossless']['ok'] else 'FAIL'}  "
            f"verify {f.get('verify', 0):.3f}/{s.get('verify', 0):.3f} ms  "
            f"draft steps>=1 indexer {idx} ms  (fresh/share, median per decode step)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--contexts", type=int, nargs="+", default=[8192, 32768, 65536])
    ap.add_argument("--topk", type=int, default=2048)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--out-len", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            print("reference on cuda: skipped, torch sees no CUDA device", file=sys.stderr)
            return 2
    from mtpsim.fileio import atomic_write_json

    if a.threads:
        import torch

        torch.set_num_threads(a.threads)
    a.out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    ok = True
    for ctx in sorted(a.contexts):
        results.append(run_context(ctx, a))
        ok = ok and results[-1].get("lossless", {}).get("ok", True)
        atomic_write_json(a.out / "reference.json", {"device": a.device, "runs": results})
        print(_line(results[-1]), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
