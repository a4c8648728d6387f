"""Tiny random-init reference models for engine tests (float64, so near-ties cannot flip argmax)."""

from __future__ import annotations

from pathlib import Path

import torch

from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
from mtpsim.engine.model import ModelArgs, Transformer

torch.set_num_threads(1)


def tiny_spec(folder: Path, template: str, name: str = "exp.toml", **fields: object) -> Path:
    """An experiment file FOLDER/NAME from TEMPLATE, its `{weights}` a tiny random-init model saved
    once as FOLDER/w.safetensors (vocab 256, float16), its other fields from FIELDS."""
    from mtpsim.engine import weights

    w = folder / "w.safetensors"
    if not w.exists():
        weights.save(tiny_model(vocab=256).float(), w, torch.float16, {"note": "random init"})
    spec = folder / name
    spec.write_text(template.format(weights=w, **fields))
    return spec


def tiny_model(vocab: int = 16, seed: int = 0) -> Transformer:
    """2 layers, d_model 32. The MTP's eh_proj passes the target's hidden through (plus its random
    init) and the head is sharpened, so drafts are accepted often but not always."""
    torch.manual_seed(seed)
    args = ModelArgs(vocab_size=vocab, n_layer=2, dim=32, n_head=2, intermediate_size=64,
                     n_index_head=2, index_head_dim=8, max_seq_len=512)
    model = Transformer(args).double().eval()
    with torch.no_grad():
        model.mtp.eh_proj.weight[:, args.dim:] += torch.eye(args.dim, dtype=torch.float64)
        model.output.weight *= 20
    return model


@torch.inference_mode()
def target_greedy(model: Transformer, prompt: list[int], n: int, topk: int) -> list[int]:
    """The target model alone, one token per forward: what speculative decoding must reproduce."""
    model.setup_caches(1, len(prompt) + n + 1, topk)
    slot = torch.tensor([0])
    logits, _ = model(torch.tensor([prompt]), torch.arange(len(prompt))[None], slot, topk)
    out: list[int] = []
    for _ in range(n):
        out.append(int(logits[0, -1].argmax()))
        pos = torch.tensor([[len(prompt) + len(out) - 1]])
        logits, _ = model(torch.tensor([[out[-1]]]), pos, slot, topk)
    return out


def run(model: Transformer, prompts: list[list[int]], policy: str, *, k: int = 3, topk: int = 4,
        max_tokens: int = 24, temperature: float = 0.0, max_num_seqs: int = 2,
        prefill_chunk: int = 8, seeds: list[int] | None = None,
        engine: SpecDecodeEngine | None = None) -> tuple[dict[str, list[int]], SpecDecodeEngine]:
    """Serve `prompts` to completion; -> ({request id: output tokens}, engine)."""
    if engine is None:
        max_len = max(len(p) for p in prompts) + max_tokens
        engine = SpecDecodeEngine(model, EngineConfig(
            num_speculative_tokens=k, index_topk=topk, max_num_seqs=max_num_seqs,
            max_model_len=max_len, policy=policy, prefill_chunk=prefill_chunk, trace=True))
    outs: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        engine.add_request(f"r{i}", p, max_tokens, temperature, ignore_eos=True,
                           seed=None if seeds is None else seeds[i])
        outs[f"r{i}"] = []
    while engine.has_unfinished():
        for o in engine.step():
            outs[o.request_id] += o.new_token_ids
    return outs, engine


def prompts(vocab: int, lengths: tuple[int, ...], seed: int = 1) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(1, vocab, (n,), generator=g).tolist() for n in lengths]
