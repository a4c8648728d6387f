"""Train the reference DSA + MTP model on the standard library's `.py` files (offline, seeded).

Phases, each time-budgeted:
  A  dense pretraining: next-token loss + 0.3 x MTP next-next-token loss (DeepSeek-V3 style)
  B  indexer distillation: main model and MTP block frozen, each layer's indexer (the MTP
     layer's included) trained on KL(dense attention, summed over heads || softmax(indexer))
  C  sparse fine-tune: top-k sparse attention from the frozen indexers, LM losses as in A
Checkpoints (fp32) and a JSON-lines log go to --work-dir; the final fp16 weights and a JSON
sidecar (config + training stats) go to --export.

    python experiments/train_reference.py --minutes 100 --seed 0

`--init` continues from saved weights (their recorded phases and tokens are kept), e.g. phases
B and C alone after a phase-A-only run:

    python experiments/train_reference.py --init .train/ckpt.safetensors --minutes 18
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch

from mtpsim.engine import weights
from mtpsim.engine.corpus import joined
from mtpsim.engine.model import ModelArgs, Transformer

ROOT = Path(__file__).resolve().parents[1]


def batches(data: torch.Tensor, batch: int, length: int, gen: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, data.numel() - length - 1, (batch,), generator=gen)
    return torch.stack([data[s:s + length] for s in starts.tolist()]).long()


@torch.no_grad()
def evaluate(model: Transformer, held: torch.Tensor, context: int, mode: str, topk: int,
             n: int = 8) -> tuple[float, float]:
    """Mean held-out (main, MTP) loss in nats/byte over n fixed, evenly spaced windows."""
    model.eval()
    step = (held.numel() - context - 3) // n
    seq = torch.stack([held[i * step:i * step + context + 2] for i in range(n)]).long()
    main, mtp = 0.0, 0.0
    for chunk in seq.split(2):
        a, b, _ = model.forward_train(chunk, "dense" if mode == "distill" else mode, topk)
        main, mtp = main + a.item() * len(chunk), mtp + b.item() * len(chunk)
    model.train()
    return main / n, mtp / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=100.0, help="total wall-clock budget")
    ap.add_argument("--distill-minutes", type=float, default=8.0)
    ap.add_argument("--sparse-minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--context", type=int, default=1024, help="phase A window")
    ap.add_argument("--distill-context", type=int, default=1024, help="phase B window")
    ap.add_argument("--long-context", type=int, default=2048, help="phase C window")
    ap.add_argument("--tokens-per-step", type=int, default=8192)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--distill-lr", type=float, default=1e-2)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--topk", type=int, default=64, help="phase C and sparse evaluation")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint-minutes", type=float, default=5.0)
    ap.add_argument("--work-dir", type=Path, default=ROOT / ".train")
    ap.add_argument("--export", type=Path, default=weights.BUILTIN)
    ap.add_argument("--init", type=Path, help="start from these weights (.safetensors + .json)")
    ap.add_argument("--init-indexers", type=Path,
                    help="then take the indexers' weights from this file (warm-started distillation)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    a.work_dir.mkdir(parents=True, exist_ok=True)
    log = (a.work_dir / "train.log").open("a")
    train = torch.from_numpy(np.frombuffer(joined(False), dtype=np.uint8).copy())
    held = torch.from_numpy(np.frombuffer(joined(True), dtype=np.uint8).copy())
    args = ModelArgs(index_topk=a.topk)
    model = Transformer(args) if a.init is None else weights.load(a.init).train()
    if a.init_indexers is not None:
        from safetensors.torch import load_file

        idx = {k: v.float() for k, v in load_file(str(a.init_indexers)).items() if ".indexer." in k}
        missing = model.load_state_dict(idx, strict=False).missing_keys
        assert len(missing) == len(model.state_dict()) - len(idx), "indexer names do not match"
    n_params = sum(p.numel() for p in model.parameters())
    t_start = time.monotonic()
    stats: dict[str, object] = {"seed": a.seed, "params": n_params, "train_bytes": train.numel(),
                                "held_out_bytes": held.numel(), "tokens": 0, "phases": {}}

    def emit(rec: dict[str, object]) -> None:
        rec = {"minute": round((time.monotonic() - t_start) / 60, 2), **rec}
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(json.dumps(rec), flush=True)

    def checkpoint(tag: str) -> None:
        weights.save(model, a.work_dir / "ckpt.safetensors", torch.float32, {"checkpoint": tag, **stats})

    if a.init is not None:  # continuing: keep the earlier phases' record
        before = weights.read_meta(a.init)
        stats["tokens"] = before.get("tokens", 0)
        stats["phases"] = dict(before.get("phases", {}))
        stats["earlier_minutes"] = before.get("minutes") or sum(
            float(ph.get("minutes", 0.0)) for ph in stats["phases"].values())
    emit({"event": "start", "params": n_params, "train_bytes": train.numel(), "args": vars(a) | {
        "work_dir": str(a.work_dir), "export": str(a.export), "init": a.init and str(a.init),
        "init_indexers": a.init_indexers and str(a.init_indexers)}})
    dense_min = a.minutes - a.distill_minutes - a.sparse_minutes
    phases = [("A", "dense", dense_min, a.context), ("B", "distill", a.distill_minutes, a.distill_context),
              ("C", "sparse", a.sparse_minutes, a.long_context)]
    for name, mode, minutes, ctx in phases:
        if minutes <= 0:
            continue
        is_idx = {n: ".indexer." in n for n, _ in model.named_parameters()}
        for n, p in model.named_parameters():
            p.requires_grad_(is_idx[n] if mode == "distill" else not is_idx[n])
        params = [p for p in model.parameters() if p.requires_grad]
        lr = {"dense": a.lr, "distill": a.distill_lr, "sparse": a.lr * 0.15}[mode]
        wd = 0.0 if mode == "distill" else 0.1
        opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=wd)
        batch = max(1, a.tokens_per_step // ctx)
        t0, last_ckpt, step, tokens = time.monotonic(), time.monotonic(), 0, 0
        budget = minutes * 60
        while (el := time.monotonic() - t0) < budget:
            frac = el / budget
            warm = min(1.0, (step + 1) / (50 if mode == "dense" else 5))
            decay = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)) if mode == "dense" else 1.0
            for g in opt.param_groups:
                g["lr"] = lr * warm * decay
            seq = batches(train, batch, ctx + 2, gen)
            loss, mtp_loss, kl = model.forward_train(seq, mode, a.topk)
            total = kl if mode == "distill" else loss + a.mtp_weight * mtp_loss
            opt.zero_grad(set_to_none=True)
            total.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step, tokens = step + 1, tokens + batch * ctx
            stats["tokens"] = int(stats["tokens"]) + batch * ctx  # type: ignore[call-overload]
            if step % 10 == 0:
                emit({"phase": name, "step": step, "loss": round(loss.item(), 4),
                      "mtp_loss": round(mtp_loss.item(), 4), "kl": round(kl.item(), 4),
                      "tok_s": round(tokens / (time.monotonic() - t0))})
            if time.monotonic() - last_ckpt > a.checkpoint_minutes * 60:
                ev = evaluate(model, held, ctx, "dense" if mode == "dense" else "sparse", a.topk)
                emit({"phase": name, "step": step, "held_out": ev})
                checkpoint(f"{name}:{step}")
                last_ckpt = time.monotonic()
        dense_ev = evaluate(model, held, a.context, "dense", a.topk)
        sparse_ev = evaluate(model, held, a.context, "sparse", a.topk)
        if name in stats["phases"]:  # type: ignore[operator]  # a continuation repeating a phase
            name = f"{name}{sum(k.startswith(name) for k in stats['phases'])}"  # type: ignore[union-attr]
        stats["phases"][name] = {  # type: ignore[index]
            "mode": mode, "minutes": round((time.monotonic() - t0) / 60, 2), "steps": step,
            "tokens": tokens, "context": ctx, "batch": batch,
            "held_out_dense": {"main": round(dense_ev[0], 4), "mtp": round(dense_ev[1], 4)},
            f"held_out_top{a.topk}": {"main": round(sparse_ev[0], 4), "mtp": round(sparse_ev[1], 4)}}
        emit({"event": "phase_end", "phase": name, **stats["phases"][name]})  # type: ignore[index]
        checkpoint(f"{name}:end")
    stats["minutes"] = round((time.monotonic() - t_start) / 60 + float(stats.get("earlier_minutes", 0.0)), 2)
    stats["loss_unit"] = f"nats/byte, held-out stdlib modules, context {a.context}"
    weights.save(model, a.export, torch.float16, stats)
    emit({"event": "exported", "path": str(a.export), **stats})


if __name__ == "__main__":
    main()
