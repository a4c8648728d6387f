"""Train a reference DSA + MTP model on the standard library's `.py` files (offline, seeded).

Phases, each time-budgeted (a phase with 0 minutes is skipped):
  A  dense pretraining: next-token loss + 0.3 x MTP next-next-token loss (DeepSeek-V3 style)
  L  dense context extension (optional, --extend-minutes): as A on --extend-context windows,
     so the model has seen the long contexts it will serve (e.g. 8 K with a 16 K RoPE table)
  B  indexer distillation: main model and MTP block frozen, each layer's indexer (the MTP
     layer's included) trained on KL(dense attention, summed over heads || softmax(indexer))
  C  sparse fine-tune: top-k sparse attention from the frozen indexers, LM losses as in A
`--size` picks the architecture (small ~1.2 M, base 4.5 M = the shipped model, large ~20 M
parameters); the recipe is the same for every size. Checkpoints (fp32 weights, the optimizer's
state and the data generator's state, all safetensors) and a JSON-lines log go to --work-dir;
rerunning the same command resumes from the last checkpoint there. The final fp16 weights and
a JSON sidecar (config + training stats) go to --export.

    python experiments/train_reference.py --minutes 100 --seed 0
    python experiments/train_reference.py --size small --rope-table 16384 --minutes 100 \
        --extend-minutes 25 --extend-context 8192 --work-dir /work/ckpt/small \
        --export /work/ckpt/small/reference-small.safetensors

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
from typing import Any

import numpy as np
import torch

from mtpsim.engine import weights
from mtpsim.engine.corpus import joined
from mtpsim.engine.model import ModelArgs, Transformer

ROOT = Path(__file__).resolve().parents[1]
SIZES: dict[str, dict[str, int]] = {
    "small": {"n_layer": 4, "dim": 128, "n_head": 4, "intermediate_size": 352},
    "base": {"n_layer": 4, "dim": 256, "n_head": 4, "intermediate_size": 704},
    "large": {"n_layer": 5, "dim": 512, "n_head": 8, "intermediate_size": 1408},
}
# Arguments that must match for a rerun to resume the run in --work-dir.
RUN_KEYS = ("size", "seed", "minutes", "extend_minutes", "distill_minutes", "sparse_minutes", "context",
            "extend_context", "distill_context", "long_context", "tokens_per_step", "topk", "rope_table")


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
    for chunk in seq.split(2 if context <= 2048 else 1):
        a, b, _ = model.forward_train(chunk, "dense" if mode == "distill" else mode, topk)
        main, mtp = main + a.item() * len(chunk), mtp + b.item() * len(chunk)
    model.train()
    return main / n, mtp / n


def save_optimizer(path: Path, opt: torch.optim.Optimizer, gen: torch.Generator, tag: str) -> None:
    """The optimizer's per-parameter tensors and the data generator's state, as safetensors."""
    from safetensors.torch import save_file

    flat = {"rng": gen.get_state()}
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            flat[f"{i}.{k}"] = torch.as_tensor(v).detach().clone().contiguous()
    tmp = path.with_name(path.name + ".tmp")
    save_file(flat, str(tmp), metadata={"checkpoint": tag})
    tmp.replace(path)


def load_optimizer(path: Path, opt: torch.optim.Optimizer, gen: torch.Generator, tag: str) -> None:
    from safetensors import safe_open

    with safe_open(str(path), "pt") as f:
        if (f.metadata() or {}).get("checkpoint") != tag:
            raise SystemExit(f"{path}: checkpoint tag differs from resume.json ({tag!r}); use --restart")
        flat = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no __iter__)
    gen.set_state(flat.pop("rng"))
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, v in flat.items():
        i, k = key.split(".", 1)
        state.setdefault(int(i), {})[k] = v
    sd = opt.state_dict()
    opt.load_state_dict({"state": state, "param_groups": sd["param_groups"]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=sorted(SIZES), default="base", help="architecture (see SIZES)")
    ap.add_argument("--rope-table", type=int, default=8192, help="RoPE table = longest servable context")
    ap.add_argument("--minutes", type=float, default=100.0, help="total budget (see --clock)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="what the budgets count: wall-clock minutes, or this process's CPU minutes / "
                         "--threads (time spent waiting for a core on a shared machine does not count)")
    ap.add_argument("--extend-minutes", type=float, default=0.0, help="phase L (long dense windows)")
    ap.add_argument("--distill-minutes", type=float, default=8.0)
    ap.add_argument("--sparse-minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--context", type=int, default=1024, help="phase A window")
    ap.add_argument("--extend-context", type=int, default=8192, help="phase L window")
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
    ap.add_argument("--restart", action="store_true", help="ignore a resumable checkpoint in --work-dir")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    now = time.monotonic if a.clock == "wall" else (lambda: time.process_time() / a.threads)
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed)
    a.work_dir.mkdir(parents=True, exist_ok=True)
    log = (a.work_dir / "train.log").open("a")
    train = torch.from_numpy(np.frombuffer(joined(False), dtype=np.uint8).copy())
    held = torch.from_numpy(np.frombuffer(joined(True), dtype=np.uint8).copy())
    ckpt, opt_file = a.work_dir / "ckpt.safetensors", a.work_dir / "opt.safetensors"
    resume_file = a.work_dir / "resume.json"
    run = {k: getattr(a, k) for k in RUN_KEYS}
    resume: dict[str, Any] | None = None
    if resume_file.exists() and not a.restart:
        resume = json.loads(resume_file.read_text())
        if resume["run"] != run:
            raise SystemExit(f"{resume_file}: a different run ({resume['run']}); use --restart")
        if weights.read_meta(ckpt).get("checkpoint") != resume["tag"]:
            raise SystemExit(f"{ckpt}: checkpoint tag differs from {resume_file}; use --restart")
        model = weights.load(ckpt).train()
    else:
        args = ModelArgs(index_topk=a.topk, max_seq_len=a.rope_table, **SIZES[a.size])
        model = Transformer(args) if a.init is None else weights.load(a.init).train()
    if a.init_indexers is not None and resume is None:
        from safetensors.torch import load_file

        idx = {k: v.float() for k, v in load_file(str(a.init_indexers)).items() if ".indexer." in k}
        missing = model.load_state_dict(idx, strict=False).missing_keys
        assert len(missing) == len(model.state_dict()) - len(idx), "indexer names do not match"
    n_params = sum(p.numel() for p in model.parameters())
    t_start = now()
    stats: dict[str, Any] = {"seed": a.seed, "size": a.size, "params": n_params, "train_bytes": train.numel(),
                             "held_out_bytes": held.numel(), "tokens": 0, "phases": {}}

    def elapsed_total() -> float:
        return now() - t_start + float(stats.get("earlier_minutes", 0.0)) * 60

    def emit(rec: dict[str, object]) -> None:
        rec = {"minute": round(elapsed_total() / 60, 2), **rec}
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(json.dumps(rec), flush=True)

    def checkpoint(tag: str, phase: int, phase_s: float, step: int, tokens: int,
                   opt: torch.optim.Optimizer | None) -> None:
        """Weights, optimizer + generator, then resume.json last (it names the checkpoint)."""
        stats["earlier_minutes"] = elapsed_total() / 60
        nonlocal t_start
        t_start = now()
        weights.save(model, ckpt, torch.float32, {"checkpoint": tag, **stats})
        if opt is not None:
            save_optimizer(opt_file, opt, gen, tag)
        state = {"tag": tag, "run": run, "phase": phase, "phase_s": phase_s, "step": step, "tokens": tokens,
                 "has_opt": opt is not None, "rng": None if opt is not None else gen.get_state().tolist(),
                 "stats": stats}
        tmp = resume_file.with_name(resume_file.name + ".tmp")
        tmp.write_text(json.dumps(state) + "\n")
        tmp.replace(resume_file)

    if resume is not None:
        stats = resume["stats"]
        if resume["rng"] is not None:
            gen.set_state(torch.tensor(resume["rng"], dtype=torch.uint8))
    elif a.init is not None:  # continuing: keep the earlier phases' record
        before = weights.read_meta(a.init)
        stats["tokens"] = before.get("tokens", 0)
        stats["phases"] = dict(before.get("phases", {}))
        stats["earlier_minutes"] = before.get("minutes") or sum(
            float(ph.get("minutes", 0.0)) for ph in stats["phases"].values())
    emit({"event": "resume" if resume else "start", "params": n_params, "args": {
        k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items()},
        **({"from": resume["tag"]} if resume else {})})
    dense_min = a.minutes - a.extend_minutes - a.distill_minutes - a.sparse_minutes
    phases = [("A", "dense", dense_min, a.context, a.lr),
              ("L", "dense", a.extend_minutes, a.extend_context, a.lr * 0.3),
              ("B", "distill", a.distill_minutes, a.distill_context, a.distill_lr),
              ("C", "sparse", a.sparse_minutes, a.long_context, a.lr * 0.15)]
    first = resume["phase"] if resume else 0
    for pi, (name, mode, minutes, ctx, lr) in enumerate(phases):
        if minutes <= 0 or pi < first:
            continue
        is_idx = {n: ".indexer." in n for n, _ in model.named_parameters()}
        for n, p in model.named_parameters():
            p.requires_grad_(is_idx[n] if mode == "distill" else not is_idx[n])
        params = [p for p in model.parameters() if p.requires_grad]
        wd = 0.0 if mode == "distill" else 0.1
        opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=wd)
        batch = max(1, a.tokens_per_step // ctx)
        done_s, step, tokens = 0.0, 0, 0
        if resume and pi == first and resume["has_opt"]:
            load_optimizer(opt_file, opt, gen, resume["tag"])
            done_s, step, tokens = resume["phase_s"], resume["step"], resume["tokens"]
            emit({"event": "resumed", "phase": name, "step": step, "phase_minutes": round(done_s / 60, 2)})
        t0, last_ckpt = now() - done_s, now()
        budget = minutes * 60
        cosine = name in ("A", "L")
        while (el := now() - t0) < budget:
            frac = el / budget
            warm = min(1.0, (step + 1) / (50 if name == "A" else 5))
            decay = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)) if cosine else 1.0
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
            stats["tokens"] = int(stats["tokens"]) + batch * ctx
            if step % 10 == 0:
                emit({"phase": name, "step": step, "loss": round(loss.item(), 4),
                      "mtp_loss": round(mtp_loss.item(), 4), "kl": round(kl.item(), 4),
                      "tok_s": round(tokens / (now() - t0))})
            if now() - last_ckpt > a.checkpoint_minutes * 60:
                t_eval = now()
                ev = evaluate(model, held, ctx, "dense" if mode == "dense" else "sparse", a.topk)
                emit({"phase": name, "step": step, "held_out": ev})
                t0 += now() - t_eval  # evaluations do not eat the phase's training budget
                checkpoint(f"{name}:{step}", pi, now() - t0, step, tokens, opt)
                last_ckpt = now()
        dense_ev = evaluate(model, held, a.context, "dense", a.topk)
        sparse_ev = evaluate(model, held, a.context, "sparse", a.topk)
        key = name
        if key in stats["phases"]:  # a continuation repeating a phase
            key = f"{name}{sum(k.startswith(name) for k in stats['phases'])}"
        stats["phases"][key] = {
            "mode": mode, "minutes": round(budget / 60 if el >= budget else el / 60, 2), "steps": step,
            "tokens": tokens, "context": ctx, "batch": batch,
            "held_out_dense": {"main": round(dense_ev[0], 4), "mtp": round(dense_ev[1], 4)},
            f"held_out_top{a.topk}": {"main": round(sparse_ev[0], 4), "mtp": round(sparse_ev[1], 4)}}
        emit({"event": "phase_end", "phase": key, **stats["phases"][key]})
        checkpoint(f"{name}:end", pi + 1, 0.0, 0, 0, None)
    if a.extend_minutes > 0 and "held_out_long" not in stats:  # the long windows the model was extended to
        ctx = a.extend_context
        d = evaluate(model, held, ctx, "dense", a.topk, n=4)
        s = evaluate(model, held, ctx, "sparse", a.topk, n=4)
        stats["held_out_long"] = {"context": ctx, "windows": 4,
                                  "dense": {"main": round(d[0], 4), "mtp": round(d[1], 4)},
                                  f"top{a.topk}": {"main": round(s[0], 4), "mtp": round(s[1], 4)}}
        emit({"event": "held_out_long", **stats["held_out_long"]})
    stats["minutes"] = round(elapsed_total() / 60, 2)
    stats["loss_unit"] = f"nats/byte, held-out stdlib modules, context {a.context}"
    record = {k: v for k, v in stats.items() if k != "earlier_minutes"}
    weights.save(model, a.export, torch.float16, record)
    emit({"event": "exported", "path": str(a.export), **record})


if __name__ == "__main__":
    main()
