"""Continuous-batching MTP speculative decoding over the reference model, mirroring vLLM MRV2.

API (the OpenAI-compatible server builds on this; all token ids are bytes 0..255, EOS = 0):

    model = mtpsim.engine.weights.load()                   # shipped weights, or load(path)
    engine = SpecDecodeEngine(model, EngineConfig(num_speculative_tokens=3, index_topk=64,
                              max_num_seqs=8, max_model_len=4096, policy="share"))
    engine.add_request("r1", prompt_tokens=[...], max_tokens=64, temperature=1.0,
                       ignore_eos=False, seed=0)           # ValueError on bad input
    while engine.has_unfinished():
        for out in engine.step():                          # list[RequestOutput]
            out.request_id, out.new_token_ids, out.finished, out.finish_reason  # "length"|"stop"
    engine.abort_request("r1")
    engine.stats        # mtpsim.metrics.SpecDecodeCounters: num_drafts, num_draft_tokens,
                        # num_accepted_tokens, accepted_per_pos (vLLM's counter definitions)
    engine.trace        # mtpsim.trace.Trace; steps are recorded when EngineConfig(trace=True)

`step()` first verifies the running requests' drafts (target over k+1 tokens each, rejection
sampling, a bonus token when all k are accepted) and proposes new drafts for them; then it
admits waiting requests into free slots (FCFS, up to `max_num_seqs` live), prefills each
(chunked), samples its first token and proposes its first drafts. A propose is draft step 0
(the "draft prefill" over each request's newly verified rows) then steps 1..k-1, bracketed by
the four vLLM 0.33.0 hooks of the configured policy (`mtpsim.policies`). An EOS token that
stops a request is included in its `new_token_ids`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import field

import torch
from torch import Tensor

from mtpsim.dataclass import dataclass
from mtpsim.engine.corpus import EOS
from mtpsim.engine.model import PhaseTimer, Transformer
from mtpsim.engine.sampling import rejection_sample, sample
from mtpsim.metrics import SpecDecodeCounters
from mtpsim.policies import make_policy
from mtpsim.result import PHASES
from mtpsim.trace import Trace
from mtpsim.trace_records import TraceMeta, TraceRequest, TraceStep

PREFILL_ROW_KEYS = 16384  # 256 rows at top-64: 16 MiB of fp32 keys (and values) per gather


@dataclass(frozen=True)
class EngineConfig:
    num_speculative_tokens: int = 3
    index_topk: int = 64
    max_num_seqs: int = 8
    max_model_len: int = 4096  # prompt + output tokens per request
    policy: str = "share"
    # rows per target / draft prefill call; None: PREFILL_ROW_KEYS // index_topk, so the gathered
    # [rows, top-k, heads, head_dim] block has the same size at every top-k (its cost per key then
    # does not grow with top-k: benchmarks/bench_reference_topk_cost.py)
    prefill_chunk: int | None = None
    trace: bool = False  # shadow-compute fresh top-k at reused steps and keep per-step records


@dataclass
class RequestOutput:
    request_id: str
    new_token_ids: list[int]
    finished: bool
    finish_reason: str | None = None  # "length" | "stop"
    counters: SpecDecodeCounters | None = None  # this request's spec-decode counters, once finished


@dataclass
class _Request:
    id: str
    prompt: list[int]
    max_tokens: int
    temperature: float
    ignore_eos: bool
    gen: torch.Generator
    slot: int = -1
    output: list[int] = field(default_factory=list)
    drafts: Tensor | None = None  # [k]
    draft_probs: Tensor | None = None  # [k, V], None when greedy
    overlap: list[float] = field(default_factory=list)  # per draft step >= 1 of the pending drafts
    counters: SpecDecodeCounters = field(default_factory=SpecDecodeCounters)

    @property
    def tokens(self) -> list[int]:
        return self.prompt + self.output


class SpecDecodeEngine:
    """MTP speculative decoding with continuous batching; see the module docstring."""

    def __init__(self, model: Transformer, config: EngineConfig, seed: int = 0,
                 timer: PhaseTimer | None = None) -> None:
        k = config.num_speculative_tokens
        if k < 1 or config.index_topk < 1 or config.max_num_seqs < 1:
            raise ValueError("num_speculative_tokens, index_topk and max_num_seqs must be >= 1")
        self.model, self.cfg, self.k = model, config, k
        self.prefill_chunk = config.prefill_chunk or max(1, PREFILL_ROW_KEYS // config.index_topk)
        self.device = model.output.weight.device
        self.timer = timer or PhaseTimer()  # every phase timing, on its clock (wall or CPU)
        model.use_timer(self.timer)
        model.setup_caches(config.max_num_seqs, config.max_model_len + k + 1, config.index_topk)
        model.mtp.shadow = config.trace
        self.last_token_indices = torch.zeros(config.max_num_seqs, dtype=torch.long, device=self.device)
        self.num_speculative_steps = k  # the DraftState's k: the policies' hooks read it
        self.policy = make_policy(config.policy, model, self)  # the engine is the DraftState
        self.free_slots = list(range(config.max_num_seqs))[::-1]
        self.waiting: deque[_Request] = deque()
        self.running: list[_Request] = []
        self.stats = SpecDecodeCounters(accepted_per_pos=[0] * k)
        self.trace = Trace("reference", config.policy, k, config.index_topk,
                           meta=TraceMeta(model=model.args.to_dict(), device=str(self.device),
                                          dtype=str(model.output.weight.dtype).removeprefix("torch."),
                                          threads=torch.get_num_threads(),
                                          max_num_seqs=config.max_num_seqs))
        # The trace's time origin: the first step, on the phase clock.
        self._seed, self._n_added, self._n_steps, self._t0 = seed, 0, 0, math.nan

    # --- public API ---
    def add_request(self, request_id: str, prompt_tokens: list[int], max_tokens: int,
                    temperature: float = 1.0, ignore_eos: bool = False,
                    seed: int | None = None) -> None:
        vocab = self.model.args.vocab_size
        if any(r.id == request_id for r in (*self.waiting, *self.running)):
            raise ValueError(f"request id {request_id!r} is already live")
        if not prompt_tokens or any(not 0 <= t < vocab for t in prompt_tokens):
            raise ValueError(f"prompt_tokens must be a non-empty list of ids in [0, {vocab})")
        if max_tokens < 1 or temperature < 0:
            raise ValueError("max_tokens must be >= 1 and temperature >= 0")
        if len(prompt_tokens) + max_tokens > self.cfg.max_model_len:
            raise ValueError(f"prompt ({len(prompt_tokens)}) + max_tokens ({max_tokens}) exceeds "
                             f"max_model_len {self.cfg.max_model_len}")
        gen = torch.Generator(self.device)
        gen.manual_seed(seed if seed is not None else self._seed * 1_000_003 + self._n_added)
        self._n_added += 1
        self.waiting.append(_Request(request_id, list(prompt_tokens), max_tokens, temperature,
                                     ignore_eos, gen))

    def abort_request(self, request_id: str) -> None:
        self.waiting = deque(r for r in self.waiting if r.id != request_id)
        for r in [r for r in self.running if r.id == request_id]:
            self._free(r)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    @property
    def num_steps(self) -> int:
        return self._n_steps

    def off_clock(self, seconds: float) -> None:
        """`seconds` (on the phase clock) spent between steps on work that is not the engine's
        (the level probe): later steps' trace times leave them out."""
        if not math.isnan(self._t0):
            self._t0 += seconds

    @torch.inference_mode()
    def step(self) -> list[RequestOutput]:
        t_step = self.timer.now(self.device)
        if math.isnan(self._t0):
            self._t0 = t_step
        times = dict.fromkeys(PHASES, 0.0)
        self._attention = dict.fromkeys(PHASES, 0.0)  # sparse-attention seconds within each phase
        self.timer.attention_on = self.cfg.trace
        calls = [0] * self.k
        shadow0 = self.model.mtp.shadow_s
        outs: list[RequestOutput] = []
        verified = self._verify_and_propose(times, calls, outs) if self.running else []
        n_new = 0
        while self.waiting and self.free_slots:
            self._prefill_and_propose(self.waiting.popleft(), times, calls, outs)
            n_new += 1
        shadow = self.model.mtp.shadow_s - shadow0
        times["overhead"] = max(0.0, self.timer.now(self.device) - t_step - sum(times.values()) - shadow)
        if self.cfg.trace:
            self.trace.steps.append(TraceStep(
                self._n_steps, round(t_step - self._t0, 6), len(verified), n_new,
                {p: round(times[p], 7) for p in PHASES}, round(shadow, 7), calls, verified,
                {p: round(v, 7) for p, v in self._attention.items() if v > 0}))
        self._n_steps += 1
        return outs

    # --- phases ---
    def _verify_and_propose(self, times: dict[str, float], calls: list[int],
                            outs: list[RequestOutput]) -> list[TraceRequest]:
        reqs, k, dev = list(self.running), self.k, self.device  # _emit may free requests
        t, a0 = self.timer.now(dev), self.timer.attention_s
        last = torch.tensor([r.tokens[-1] for r in reqs], device=dev)
        drafts = torch.stack([r.drafts for r in reqs])  # type: ignore[misc]  # [B, k]
        tokens = torch.cat([last[:, None], drafts], dim=1)  # [B, k + 1]
        start = torch.tensor([len(r.tokens) - 1 for r in reqs], device=dev)
        pos = start[:, None] + torch.arange(k + 1, device=dev)  # [B, k + 1]
        slots = torch.tensor([r.slot for r in reqs], device=dev)
        logits, hidden = self.model(tokens, pos, slots, self.cfg.index_topk)
        times["verify"] += self.timer.now(dev) - t
        self._attention["verify"] += self.timer.attention_s - a0

        t = self.timer.now(dev)
        accepted, bonus = [], []
        for b, r in enumerate(reqs):
            n, c = rejection_sample(logits[b], drafts[b], r.draft_probs, r.temperature, r.gen)
            accepted.append(n)
            bonus.append(c)
        times["rejection_sample"] += self.timer.now(dev) - t

        records, keep = [], []
        for b, r in enumerate(reqs):
            n = accepted[b]
            self.stats.add(k, n)
            r.counters.add(k, n)
            records.append(TraceRequest(r.id, len(r.tokens), k, [int(i < n) for i in range(k)],
                                        [round(x, 5) for x in r.overlap]))
            new = drafts[b, :n].tolist() + [bonus[b]]
            if self._emit(r, new, outs):
                keep.append(b)
        if keep:
            kb = torch.tensor(keep, device=dev)
            j = torch.tensor([accepted[b] for b in keep], device=dev)
            # Step-0 rows: the verified tokens shifted by one; the row of the last accepted
            # token gets the bonus token, later rows are rejected and rewritten next round.
            tok0 = torch.cat([drafts[kb], torch.tensor([bonus[b] for b in keep], device=dev)[:, None]], 1)
            tok0[torch.arange(len(keep), device=dev), j] = tok0[:, -1].clone()
            self._propose([reqs[b] for b in keep], tok0, hidden[kb], pos[kb], j, times, calls)
        return records

    def _prefill_and_propose(self, r: _Request, times: dict[str, float], calls: list[int],
                             outs: list[RequestOutput]) -> None:
        dev, P = self.device, len(r.prompt)
        r.slot = self.free_slots.pop()
        self.running.append(r)
        t, a0 = self.timer.now(dev), self.timer.attention_s
        slots = torch.tensor([r.slot], device=dev)
        prompt = torch.tensor([r.prompt], device=dev)
        pos = torch.arange(P, device=dev)[None]
        hs, logits = [], None
        for a in range(0, P, self.prefill_chunk):
            b = min(P, a + self.prefill_chunk)
            logits, h = self.model(prompt[:, a:b], pos[:, a:b], slots, self.cfg.index_topk)
            hs.append(h)
        assert logits is not None
        first = sample(logits[0, -1], r.temperature, r.gen)
        times["prefill"] += self.timer.now(dev) - t
        self._attention["prefill"] += self.timer.attention_s - a0
        if self._emit(r, [first], outs):
            tok0 = torch.cat([prompt[:, 1:], torch.tensor([[first]], device=dev)], dim=1)
            self._propose([r], tok0, torch.cat(hs, dim=1), pos, torch.tensor([P - 1], device=dev),
                          times, calls)

    def _propose(self, reqs: list[_Request], tok0: Tensor, hidden0: Tensor, pos0: Tensor,
                 last: Tensor, times: dict[str, float], calls: list[int]) -> None:
        """Draft step 0 over rows tok0/hidden0/pos0 [B, T(, dim)], then steps 1..k-1.
        last [B]: index of each request's last accepted row within T."""
        model, mtp, dev, k, topk = self.model, self.model.mtp, self.device, self.k, self.cfg.index_topk
        B, T = tok0.shape
        slots = torch.tensor([r.slot for r in reqs], device=dev)
        rows = torch.arange(B, device=dev)
        t, c0, s0, a0 = self.timer.now(dev), mtp.indexer_calls, mtp.shadow_s, self.timer.attention_s
        self.policy.on_prefill_begin(B)
        chunk = self.prefill_chunk if B == 1 else T  # prompts come one request at a time
        a = 0
        for a in range(0, T, chunk):
            logits, h = model.draft(tok0[:, a:a + chunk], hidden0[:, a:a + chunk],
                                    pos0[:, a:a + chunk], slots, topk)
        width = logits.shape[1]
        self.last_token_indices[:B] = rows * width + (last - a)
        self.policy.on_prefill_end(B)
        logits, h = logits[rows, last - a], h[rows, last - a]  # [B, V], [B, dim]
        calls[0] += mtp.indexer_calls - c0
        times["draft_prefill"] += self.timer.now(dev) - t - (mtp.shadow_s - s0)
        self._attention["draft_prefill"] += self.timer.attention_s - a0

        first, first_probs = self._sample_drafts(reqs, logits)
        drafts, probs, overlaps = [first], [first_probs], []
        if k > 1:
            self.policy.on_multi_step_decode_begin(B)
            p = pos0[rows, last]
            for s in range(1, k):
                t, c0, s0, i0 = self.timer.now(dev), mtp.indexer_calls, mtp.shadow_s, mtp.indexer_s
                a0 = self.timer.attention_s
                logits, h = model.draft(drafts[-1][:, None], h[:, None], (p + s)[:, None], slots, topk)
                logits, h = logits[:, 0], h[:, 0]
                d, q = self._sample_drafts(reqs, logits)
                drafts.append(d)
                probs.append(q)
                calls[s] += mtp.indexer_calls - c0
                idx_s = mtp.indexer_s - i0
                times["draft_decode_indexer"] += idx_s
                times["draft_decode_rest"] += self.timer.now(dev) - t - (mtp.shadow_s - s0) - idx_s
                self._attention["draft_decode_rest"] += self.timer.attention_s - a0
                if mtp.last_overlap is not None and self.cfg.trace:
                    overlaps.append(mtp.last_overlap.tolist())
            self.policy.on_multi_step_decode_end(B)
        d = torch.stack(drafts, dim=1)  # [B, k]
        for b, r in enumerate(reqs):
            r.drafts = d[b]
            r.draft_probs = None if probs[0] is None else torch.stack([q[b] for q in probs])  # type: ignore[index]
            r.overlap = [o[b] for o in overlaps]

    # --- helpers ---
    def _sample_drafts(self, reqs: list[_Request], logits: Tensor) -> tuple[Tensor, Tensor | None]:
        """logits [B, V] -> drafts [B] and the draft distributions [B, V] (None: all greedy)."""
        greedy = all(r.temperature == 0 for r in reqs)
        if greedy:
            return logits.argmax(-1), None
        probs = torch.stack([torch.softmax(logits[b] / max(r.temperature, 1e-6), -1)
                             for b, r in enumerate(reqs)])
        out = torch.stack([probs[b].argmax() if r.temperature == 0 else
                           torch.multinomial(probs[b], 1, generator=r.gen)[0]
                           for b, r in enumerate(reqs)])
        return out, probs

    def _emit(self, r: _Request, new: list[int], outs: list[RequestOutput]) -> bool:
        """Append new tokens up to max_tokens / EOS; report them. True when r keeps running."""
        reason = None
        room = r.max_tokens - len(r.output)
        if len(new) >= room:
            new, reason = new[:room], "length"
        if not r.ignore_eos and EOS in new:
            new, reason = new[:new.index(EOS) + 1], "stop"
        r.output += new
        outs.append(RequestOutput(r.id, new, reason is not None, reason,
                                  r.counters if reason is not None else None))
        if reason is not None:
            self._free(r)
        return reason is None

    def _free(self, r: _Request) -> None:
        self.running.remove(r)
        self.free_slots.append(r.slot)
