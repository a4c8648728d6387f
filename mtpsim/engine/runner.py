"""Run an experiment's workload on the reference engine, one policy at a time -> Result + Trace.

Workload as `vllm bench serve` would send it: prompts cut from the held-out corpus at seeded
offsets (the same prompts, lengths, arrival times and per-request seeds for every policy, so
policies are compared on common random numbers), sent on vLLM bench's schedule with at most
`max_concurrency` in flight (mtpsim.arrivals: a request that waited for a slot is timed from
when the slot freed); the engine queues what it cannot batch (`max_num_seqs`).
Timestamps run on a clock that excludes the trace's off-the-clock shadow top-k computation.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mtpsim.arrivals import Client, send_offsets
from mtpsim.engine import weights
from mtpsim.engine.corpus import joined
from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
from mtpsim.engine.level import SPARSE, RunLevels, Sampling
from mtpsim.engine.model import PhaseTimer
from mtpsim.errors import SpecError
from mtpsim.fileio import portable
from mtpsim.records import RunExtra
from mtpsim.request_record import RequestRecord
from mtpsim.result import PHASES, Result
from mtpsim.sim.entities import draw_lengths
from mtpsim.spec import Experiment
from mtpsim.trace import Trace

Progress = Callable[[int, int], None]  # (finished requests, total)


def resolve_device(name: str) -> torch.device:
    if name == "cuda" and not torch.cuda.is_available():
        raise SpecError(None, "reference.device", "expected a CUDA device, but torch sees none")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def weights_path(exp: Experiment) -> Path:
    """The .safetensors file reference.weights names: a shipped size, or a path (a relative one
    from the experiment file's folder, as every path in a spec: mtpsim.spec.paths)."""
    from mtpsim.spec.paths import resolved

    raw = exp.reference.weights
    path = weights.resolve(resolved(exp.source, "reference.weights", raw))
    if raw in weights.NAMED and not (path.is_file() and weights.sidecar(path).is_file()):
        raise SpecError(exp.source, "reference.weights", f"expected a shipped size "
                        f"({', '.join(weights.available()) or 'none present'}), but {raw!r} has no "
                        f"weights in {path.parent}")
    if not path.is_file() or not weights.sidecar(path).is_file():
        from mtpsim.spec.paths import shown

        expected = "expected a size (small, base, large) or a .safetensors file with its .json sidecar"
        if (src := exp.source_of("reference.weights")) != exp.source:  # as typed on the command line
            raise SpecError(src, "reference.weights", f"{expected}, got {shown(path)!r} (a "
                            "relative path on the command line is taken from the current folder)")
        where = "" if str(path) == raw else f", which is {shown(path)} (a relative path is taken " \
            "from the experiment file's folder)"
        raise SpecError(src, "reference.weights", f"{expected}, got {raw!r}{where}")
    return path


def workload(exp: Experiment) -> tuple[list[list[int]], list[int], np.ndarray]:
    """(prompts, output lengths, send times): seeded, identical for every policy."""
    w = exp.workload
    rng = np.random.default_rng(exp.seed)
    in_len = draw_lengths(rng, w.num_prompts, w.input_len, w.input_len_distribution, w.input_len_spread)
    out_len = draw_lengths(rng, w.num_prompts, w.output_len, w.output_len_distribution,
                           w.output_len_spread)
    send = send_offsets(w.num_prompts, w.request_rate, w.burstiness, exp.seed)
    held = joined(held_out=True)
    if int(in_len.max()) >= len(held):
        raise SpecError(exp.source, "workload.input_len", f"expected at most {len(held) - 1} "
                        "tokens (the held-out corpus size)")
    starts = rng.integers(0, len(held) - in_len + 1)
    prompts = [list(held[s:s + n]) for s, n in zip(starts.tolist(), in_len.tolist(), strict=True)]
    return prompts, [int(x) for x in out_len], send


def _lengths(exp: Experiment, args: Any, prompts: list[list[int]], out_lens: list[int]) -> tuple[int, int]:
    """(top-k, longest prompt + output) of these requests on a model of `args` (ModelArgs),
    refused when they exceed its positions or the top-k is wider than every context."""
    topk = exp.speculative.index_topk or args.index_topk
    max_len = max(len(p) + o for p, o in zip(prompts, out_lens, strict=True))
    if max_len + exp.k + 1 > args.max_seq_len:
        raise SpecError(exp.source, "workload", f"expected prompt + output within the reference "
                        f"model's {args.max_seq_len - exp.k - 1} positions, got {max_len} tokens "
                        "(lower workload.input_len or output_len)")
    if topk > max_len:  # a top-k wider than any context selects everything: dense, and slow
        raise SpecError(exp.source, "speculative.index_topk", f"expected at most the longest "
                        f"prompt + output ({max_len} tokens), got {topk}")
    return topk, max_len


def check_workload(exp: Experiment) -> None:
    """Before any run, from the weights' config alone (no tensors read): the weights read, and
    the whole workload fits the model's positions with a top-k no wider than every context."""
    path = weights_path(exp)
    weights.check(path)
    prompts, out_lens, _ = workload(exp)
    _lengths(exp, weights.args_of(path), prompts, out_lens)


def run_policy(exp: Experiment, policy: str, progress: Progress | None = None,
               requests: range | None = None, level: bool | Sampling = False) -> tuple[Result, Trace]:
    """Serve the experiment's workload with `policy` on the reference engine; `requests`: only
    those of the seeded requests (one round), with their own prompts and sampling seeds.
    `level`: time the in-engine level probe (mtpsim.engine.level) at the run's start, while it
    serves (True: every EVERY steps; a Sampling: as it says) and at its end, on this run's threads;
    recorded as `extra.level` and `meta.level`."""
    ref, w = exp.reference, exp.workload
    if ref.threads > 0:
        torch.set_num_threads(ref.threads)
    device = resolve_device(ref.device)
    path = weights_path(exp)
    model = weights.load(path, device=device)
    prompts, out_lens, send = workload(exp)
    ids = list(requests if requests is not None else range(len(prompts)))
    prompts, out_lens = [prompts[i] for i in ids], [out_lens[i] for i in ids]
    # a round starts its own schedule at 0; the whole workload keeps the seeded offsets
    send = send[ids] - (send[ids[0]] if requests is not None and ids else 0.0)
    n = len(prompts)
    conc = min(w.max_concurrency or n, exp.engine.max_num_seqs, n)
    topk, max_len = _lengths(exp, model.args, prompts, out_lens)
    cfg = EngineConfig(num_speculative_tokens=exp.k, index_topk=topk, max_num_seqs=conc,
                       max_model_len=max_len, policy=policy, trace=True)
    cpu_clock = ref.clock == "cpu"
    if cpu_clock and device.type != "cpu":
        raise SpecError(exp.source, "reference.clock", "expected \"wall\" on a GPU (the CPU clock "
                        "does not see device time)")
    engine = SpecDecodeEngine(model, cfg, seed=exp.seed, timer=PhaseTimer(ref.clock))
    levels = RunLevels(path, device, level if isinstance(level, Sampling) else SPARSE) if level else None
    result, trace = _serve(exp, policy, engine, model, path, device, prompts, out_lens, send, conc,
                           topk, progress, idle_advances=cpu_clock, ids=ids, levels=levels)
    if levels is not None:
        result.extra.level = trace.meta.level = levels.finish(engine.timer.now(device))
    return result, trace


class _Observed:
    """What the client side sees of each request while the workload is served."""

    def __init__(self, n: int) -> None:
        self.arrival = [math.nan] * n
        self.first = [math.nan] * n
        self.finish = [math.nan] * n
        self.last_chunk = [math.nan] * n
        self.itl: list[list[float]] = [[] for _ in range(n)]
        self.n_out = [0] * n
        self.tokens: list[list[int]] = [[] for _ in range(n)]
        self.counters: list = [None] * n

    def chunk(self, i: int, new_tokens: list[int], now: float) -> None:
        """Request `i` streamed `new_tokens` at `now`: its first token or one more gap."""
        if math.isnan(self.first[i]):
            self.first[i] = now
        else:
            self.itl[i].append(now - self.last_chunk[i])
        self.last_chunk[i] = now
        self.n_out[i] += len(new_tokens)
        self.tokens[i].extend(int(t) for t in new_tokens)

    def records(self, ids: list[int], prompts: list[list[int]]) -> list[RequestRecord]:
        """One record per request, as `vllm bench serve` would time it."""
        records = []
        for i, c in enumerate(self.counters):
            records.append(RequestRecord(
                request_id=str(ids[i]), input_len=len(prompts[i]), output_len=self.n_out[i],
                arrival_s=self.arrival[i], first_token_s=self.first[i], finish_s=self.finish[i],
                itl_s=self.itl[i], itl_count=[1] * len(self.itl[i]), num_drafts=c.num_drafts,
                num_draft_tokens=c.num_draft_tokens, num_accepted_tokens=c.num_accepted_tokens,
                accepted_per_pos=list(c.accepted_per_pos)))
        return records


def _serve(exp: Experiment, policy: str, engine: SpecDecodeEngine, model: Any, path: Path,
           device: torch.device, prompts: list[list[int]], out_lens: list[int], send: np.ndarray,
           conc: int, topk: int, progress: Progress | None,
           idle_advances: bool, ids: list[int], levels: RunLevels | None = None) -> tuple[Result, Trace]:
    """The serving loop on the phase clock. `idle_advances`: the clock is CPU time, so waiting
    for the next arrival advances it by the wait instead of sleeping. `ids`: each request's
    index in the whole seeded workload (its id and sampling seed). `levels`: level readings
    between steps, taken off the clock (and off the trace's)."""
    w, n, mtp = exp.workload, len(prompts), model.mtp
    idle = 0.0
    timer = engine.timer
    t0 = timer.now(device)
    if levels is not None:
        levels.mark(t0)

    def clock() -> float:
        return timer.now(device) - t0 - mtp.shadow_s + idle - (levels.off_clock_s if levels else 0.0)

    seen = _Observed(n)
    client = Client(send, w.max_concurrency)
    local = {str(g): j for j, g in enumerate(ids)}
    done = 0
    while done < n:
        for i, sent in client.send_until(clock()):
            engine.add_request(str(ids[i]), prompts[i], out_lens[i], w.temperature, w.ignore_eos,
                               seed=exp.seed * 1_000_003 + ids[i])
            seen.arrival[i] = sent
        if not engine.has_unfinished():
            wait = max(0.0, client.next_send_s() - clock())
            if idle_advances:
                idle += wait
            else:
                time.sleep(wait)
            continue
        outs = engine.step()
        if levels is not None:
            engine.off_clock(levels.between_steps(engine.num_steps, lambda: timer.now(device)))
        now = clock()
        for o in outs:
            i = local[o.request_id]
            if o.new_token_ids:
                seen.chunk(i, o.new_token_ids, now)
            if o.finished:
                seen.finish[i], seen.counters[i] = now, o.counters
                client.on_finish(now)
                done += 1
                if progress is not None:
                    progress(done, n)
    duration = clock()
    return _result(exp, policy, engine, path, device, seen.records(ids, prompts), seen.tokens,
                   duration, mtp.shadow_s, topk, conc), engine.trace


def _result(exp: Experiment, policy: str, engine: SpecDecodeEngine, path: Path,
            device: torch.device, records: list[RequestRecord], tokens: list[list[int]],
            duration: float, shadow_s: float, topk: int, conc: int) -> Result:
    """The run's Result: the requests' metrics, per-step phase times and the engine's counts;
    the trace's meta says where it ran."""
    tr = engine.trace
    from mtpsim.uncertainty.domain import machine_info, setup_axes

    tr.meta = tr.meta.copy(experiment=portable(exp.source), seed=exp.seed, weights=portable(path),
                           context_range=list(setup_axes(exp)["context"]),
                           clock=exp.reference.clock, temperature=exp.workload.temperature,
                           machine=machine_info(str(device), torch.get_num_threads()))
    steps = max(len(tr.steps), 1)
    totals = tr.phase_totals()
    draft_decode = totals["draft_decode_indexer"] + totals["draft_decode_rest"]
    draft = totals["draft_prefill"] + draft_decode
    calls = [sum(s.mtp_indexer_calls[i] for s in tr.steps) for i in range(exp.k)]
    return Result.from_requests(
        mode="reference", policy=policy, requests=records, duration_s=duration,
        counters=engine.stats, seed=exp.seed, experiment=portable(exp.source), spec=exp.to_dict(),
        phases={p: totals[p] / steps for p in PHASES},
        extra=RunExtra(
            engine="reference", device=str(device), threads=torch.get_num_threads(),
            clock=exp.reference.clock,
            output_tokens_sha256=hashlib.sha256(json.dumps(tokens).encode()).hexdigest(),
            weights=portable(path), index_topk=topk, max_num_seqs=conc,
            num_steps=len(tr.steps), phases_total_s=totals,
            shadow_s=shadow_s, mtp_indexer_calls_per_step=calls,
            mean_overlap_per_step=tr.mean_overlap(),
            indexer_share_of_draft_decode=totals["draft_decode_indexer"] / draft_decode
            if draft_decode else None,
            draft_share_of_step=draft / max(sum(totals.values()), 1e-12)))
