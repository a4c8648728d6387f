"""Reference-engine benchmark: what index sharing buys in the MTP draft phase at long context.

For each context length it times one propose (draft step 0 over k+1 rows per request, then
steps 1..k-1) under `fresh` and `share` on caches filled to that length, reports the share of
draft-step (>= 1) time spent in the indexer + top-k, the draft-phase speed-up of `share`, and
end to end generated tokens/s of the engine (temperature 1.0) at that context.

`--before` adds `share (before)`: share as the engine ran it before issue #11, still projecting
and writing the MTP indexer's keys at the reused steps (`Attention.eager_index_keys`), timed
interleaved with the other two, so the faithful skip's gain is a side-by-side ratio.

    python benchmarks/bench_reference.py --contexts 1024 2048 4096 --batch 4 --threads 1
    python benchmarks/bench_reference.py --contexts 1024 4096 8156 --before   # base: 8 K rope table
"""

from __future__ import annotations

import argparse
import statistics

import torch

from mtpsim.engine import weights
from mtpsim.engine.corpus import joined
from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
from mtpsim.engine.model import CLOCKS, PhaseTimer, Transformer
from mtpsim.policies import make_policy

VARIANTS = {"fresh": ("fresh", False), "share": ("share", False), "share (before)": ("share", True)}


class _State:
    def __init__(self, n: int) -> None:
        self.last_token_indices = torch.zeros(n, dtype=torch.long)


@torch.inference_mode()
def time_proposes(model: Transformer, ctx: int, batch: int, k: int, topk: int,
                  repeats: int, variants: list[str]) -> dict[str, dict[str, float]]:
    """Median seconds of one propose over `batch` requests at context `ctx` (caches random-filled),
    the variants interleaved repeat by repeat (in rotated order) so machine noise hits them alike."""
    model.setup_caches(batch, ctx + k + 1, topk)
    _clock = model.timer.clock  # the engine's own timings (the indexer column) on the same clock
    g = torch.Generator().manual_seed(0)
    for block in [*model.layers, model.mtp.block]:
        c = block.attention.cache
        for buf in (c.k, c.v, c.ik):
            buf.copy_(torch.randn(buf.shape, generator=g))
    state = _State(batch)
    policies = {name: make_policy(VARIANTS[name][0], model, state) for name in variants}
    att = model.mtp.block.attention
    slots = torch.arange(batch)
    pos0 = (ctx - 1 + torch.arange(k + 1))[None].expand(batch, -1)
    tok0 = torch.randint(1, 256, (batch, k + 1), generator=g)
    hid0 = torch.randn(batch, k + 1, model.args.dim, generator=g)
    mtp = model.mtp
    times: dict[str, dict[str, list[float]]] = {n: {"step0": [], "steps": [], "indexer": []}
                                                for n in policies}
    order = list(policies)
    for rep in range(repeats):
        for name in order[rep % len(order):] + order[:rep % len(order)]:  # rotated: no order bias
            pol = policies[name]
            att.eager_index_keys = VARIANTS[name][1]
            t0 = _clock()
            pol.on_prefill_begin(batch)
            logits, h = model.draft(tok0, hid0, pos0, slots, topk)
            state.last_token_indices[:] = torch.arange(batch) * (k + 1)  # last accepted: row 0
            pol.on_prefill_end(batch)
            t1 = _clock()
            pol.on_multi_step_decode_begin(batch)
            i0 = mtp.indexer_s
            d, hs = logits[:, 0].argmax(-1), h[:, 0]
            for s in range(1, k):
                lg, hh = model.draft(d[:, None], hs[:, None], (pos0[:, 0] + s)[:, None], slots, topk)
                d, hs = lg[:, 0].argmax(-1), hh[:, 0]
            pol.on_multi_step_decode_end(batch)
            t2 = _clock()
            times[name]["step0"].append(t1 - t0)
            times[name]["steps"].append(t2 - t1)
            times[name]["indexer"].append(mtp.indexer_s - i0)
    att.eager_index_keys = False
    return {n: {key: statistics.median(v) for key, v in t.items()} for n, t in times.items()}


@torch.inference_mode()
def tokens_per_s(model: Transformer, variant: str, ctx: int, batch: int, k: int, topk: int,
                 out_len: int) -> float:
    """Generated tokens/s of the engine (decode only: the clock starts after every prefill)."""
    held = joined(held_out=True)
    policy, eager = VARIANTS[variant]
    model.mtp.block.attention.eager_index_keys = eager
    engine = SpecDecodeEngine(model, EngineConfig(num_speculative_tokens=k, index_topk=topk,
                                                  max_num_seqs=batch, max_model_len=ctx + out_len,
                                                  policy=policy), timer=model.timer)
    for i in range(batch):
        engine.add_request(str(i), list(held[i * 9973:i * 9973 + ctx]), out_len, 1.0, True, seed=i)
    n = sum(len(o.new_token_ids) for o in engine.step())  # prefills + first tokens + drafts
    _clock = model.timer.clock
    t0 = _clock()
    while engine.has_unfinished():
        n += sum(len(o.new_token_ids) for o in engine.step())
    model.mtp.block.attention.eager_index_keys = False
    return (n - batch) / (_clock() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--contexts", type=int, nargs="+", default=[1024, 2048, 4096])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--topk", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--out-len", type=int, default=48, help="tokens per request for tokens/s (0: skip)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--weights", default="builtin", help="a size (builtin, small, base, large) or a path")
    ap.add_argument("--before", action="store_true", help="also time share as it ran before issue #11")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="cpu: the thread's CPU time, which other processes do not inflate (use --threads 1)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = weights.load(weights.resolve(a.weights))
    model.use_timer(PhaseTimer(a.clock))
    if max(a.contexts) + a.out_len + a.k + 1 > model.args.max_seq_len:
        ap.error(f"--contexts: at most {model.args.max_seq_len - a.out_len - a.k - 1} with these "
                 f"weights (RoPE table {model.args.max_seq_len}, k {a.k}, --out-len {a.out_len})")
    variants = ["fresh", "share", *(["share (before)"] if a.before else [])]
    print(f"reference model, batch {a.batch}, k {a.k}, top-{a.topk}, {a.threads} thread(s), "
          f"median of {a.repeats}; times in ms per propose ({a.clock} clock)")
    print(f"{'context':>8} {'fresh step0':>11} {'fresh 1..k-1':>12} {'indexer':>8} {'idx share':>9} "
          f"{'share 1..k-1':>12} {'draft speed-up':>14} {'steps>=1 speed-up':>17} "
          f"{'tok/s fresh':>11} {'tok/s share':>11}"
          + (f" {'before: share 1..k-1':>20} {'draft speed-up':>14} {'steps>=1 speed-up':>17} "
             f"{'tok/s':>7} {'after/before draft':>18}" if a.before else ""))
    for ctx in a.contexts:
        both = time_proposes(model, ctx, a.batch, a.k, a.topk, a.repeats, variants)
        f, s = both["fresh"], both["share"]
        draft_f, draft_s = f["step0"] + f["steps"], s["step0"] + s["steps"]
        tps = ("-", "-")
        if a.out_len:
            tps = tuple(f"{tokens_per_s(model, p, ctx, a.batch, a.k, a.topk, a.out_len):.1f}"
                        for p in variants)
        print(f"{ctx:>8} {1e3 * f['step0']:>11.2f} {1e3 * f['steps']:>12.2f} "
              f"{1e3 * f['indexer']:>8.2f} {100 * f['indexer'] / f['steps']:>8.1f}% "
              f"{1e3 * s['steps']:>12.2f} {draft_f / draft_s:>13.3f}x "
              f"{f['steps'] / s['steps']:>16.3f}x {tps[0]:>11} {tps[1]:>11}", end="")
        if a.before:
            b = both["share (before)"]
            draft_b = b["step0"] + b["steps"]
            print(f" {1e3 * b['steps']:>20.2f} {draft_f / draft_b:>13.3f}x {f['steps'] / b['steps']:>16.3f}x "
                  f"{tps[2] if a.out_len else '-':>7} {draft_b / draft_s:>17.3f}x", end="")
        print(flush=True)


if __name__ == "__main__":
    main()
