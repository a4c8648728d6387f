"""The in-engine level probe: one fixed, synthetic MTP decode step timed inside every reference
run, on the run's own thread setting, clock and model code, so a run's timings can be put on the
scale of the step cost's level at the time (docs/uncertainty.md §16).

The machine probe (mtpsim.probe) is pinned to one thread and runs a matmul chain and a training
forward between runs; it tracked the runs' level only in part (§15). This probe runs the engine's
own decode-step calls instead: a target verify over B x (k+1) rows, the MTP draft over the same
rows (draft step 0) and k-1 one-row draft steps with a fresh indexer, for a fixed batch (STEP:
batch, contexts, k, top-k, seeded tokens from the held-out corpus). Its model is a second instance
of the run's weights with its own caches (the run's caches and slots are never touched); the
contexts are prefilled once when it is built (untimed), and every step writes the same keys at the
same positions, so the work is the same every time.

A reading is WARMUP untimed steps then `repeats` timed ones, on wall and on this thread's CPU
clock, taken at a run's start and end and, while it serves (off the run's clock), every EVERY
engine steps (§16: `SPARSE`, the median of all timed steps) or, densely, one timed step without
warm-up every few engine steps (`Sampling.dense`, §17), each carrying the engine seconds since
the reading before (`engine_s`), so the run's level can be the trimmed mean weighted by them
(mtpsim.level.figure). A timing measured at level L0 is put on the scale of level L1 by `scaled`
(durations x L1/L0, rates x L0/L1).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from mtpsim.dataclass import dataclass
from mtpsim.level import AVERAGES, LEVEL_VERSION, record

WARMUP, REPEATS = 1, 3
EVERY = 128  # engine steps between readings while a run serves (§16)


@dataclass(frozen=True, slots=True)
class Sampling:
    """When a run reads its level: `every` engine steps (0: only at its ends) a reading of `warmup`
    untimed and `repeats` timed steps, and the run's level by `average` (mtpsim.level.AVERAGES). The
    readings at the run's start and end are WARMUP untimed and `ends_repeats` timed steps."""

    every: int = EVERY
    repeats: int = REPEATS
    warmup: int = WARMUP
    average: str = "median"
    ends_repeats: int = REPEATS

    def __post_init__(self) -> None:
        if (self.average not in AVERAGES or self.every < 0 or self.repeats < 1 or self.warmup < 0
                or self.ends_repeats < 1):
            raise ValueError(f"bad level sampling {self}")

    @classmethod
    def dense(cls, every: int, average: str = "weighted") -> Sampling:
        """One timed step, no warm-up, every `every` engine steps, and one timed step after a warm-up
        at the ends (§17: the ends weigh nothing or little in the weighted figure)."""
        return cls(every=every, repeats=1, warmup=0, average=average, ends_repeats=1)


SPARSE = Sampling()


@dataclass(frozen=True, slots=True)
class Step:
    """The fixed synthetic decode step: batch = len(contexts)."""

    contexts: tuple[int, ...] = (320, 480, 640, 800)
    k: int = 4
    index_topk: int = 64
    seed: int = 20

    @property
    def batch(self) -> int:
        return len(self.contexts)

    def fitting(self, max_seq_len: int) -> Step:
        """This step within a model's rope table (the shipped models: unchanged); a smaller
        model's step has shorter contexts, so its figures compare only with its own."""
        room = max_seq_len - 2 * self.k - 1
        if all(c <= room for c in self.contexts):
            return self
        ctx = tuple(max(1, min(c, room)) for c in self.contexts)
        return replace(self, contexts=ctx, index_topk=min(self.index_topk, min(ctx)))

    def to_json(self) -> dict[str, Any]:
        return {"contexts": list(self.contexts), "k": self.k, "index_topk": self.index_topk,
                "seed": self.seed}


STEP = Step()


def _fill(model: Any, seed: int, n_tokens: int) -> torch.Tensor:
    """Seeded caches (every layer's keys, values and indexer keys) and tokens [B, n_tokens]: the
    step's cost depends on the shapes, not on the values, so the contexts are not prefilled."""
    from mtpsim.engine.model import LayerCache

    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, LayerCache):
            for buf in (m.k, m.v, m.ik):
                buf.copy_(torch.randn(buf.shape, generator=g, dtype=buf.dtype))
    return torch.randint(1, model.args.vocab_size, (model.target_topk.shape[0], n_tokens), generator=g)


class LevelProbe:
    """The fixed step on its own instance of a run's model; `reading()` times it."""

    def __init__(self, weights_path: Path, device: torch.device, step: Step = STEP) -> None:
        from mtpsim.engine import weights

        t0 = time.perf_counter()
        self.device = device
        self.model = weights.load(weights_path, device=device)
        self.step_cfg = step = step.fitting(self.model.args.max_seq_len)
        B, k = step.batch, step.k
        self.model.setup_caches(B, max(step.contexts) + 2 * k + 1, step.index_topk)
        tokens = _fill(self.model, step.seed, 2 * k).to(device)
        self.slots = torch.arange(B, device=device)
        ctx = torch.tensor(step.contexts, device=device)
        self.tokens = tokens[:, :k + 1]  # the last verified token and k drafts, at ctx-1 .. ctx+k-1
        self.pos = (ctx - 1)[:, None] + torch.arange(k + 1, device=device)  # [B, k + 1]
        self.later = tokens[:, k + 1:]  # draft steps 1..k-1 inputs [B, k - 1]
        self.setup_s = time.perf_counter() - t0

    def step(self) -> None:
        """One decode step's model calls: verify [B, k+1], draft step 0 [B, k+1], steps 1..k-1."""
        model, k, topk, slots = self.model, self.step_cfg.k, self.step_cfg.index_topk, self.slots
        with torch.inference_mode():
            _, hidden = model(self.tokens, self.pos, slots, topk)
            tok0 = torch.cat([self.tokens[:, 1:], self.later[:, :1]], 1)
            _, h = model.draft(tok0, hidden, self.pos, slots, topk)
            h = h[:, -1:]
            last = self.pos[:, -1:]
            for s in range(1, k):
                _, h = model.draft(self.later[:, s - 1:s], h, last + s, slots, topk)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def reading(self, repeats: int = REPEATS, where: str = "", warmup: int = WARMUP) -> dict[str, Any]:
        """`warmup` untimed steps, then `repeats` timed ones -> the reading record."""
        w_start, c_start = time.perf_counter(), time.thread_time()
        for _ in range(warmup):
            self.step()
        walls, cpus = [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.thread_time()
            self.step()
            cpus.append(time.thread_time() - c0)
            walls.append(time.perf_counter() - w0)
        return {"version": LEVEL_VERSION, "where": where, "step": self.step_cfg.to_json(),
                "threads": torch.get_num_threads(), "repeats": repeats, "wall_s": statistics.median(walls),
                "cpu_s": statistics.median(cpus), "walls_s": walls, "cpus_s": cpus,
                "cost_wall_s": time.perf_counter() - w_start, "cost_cpu_s": time.thread_time() - c_start,
                "utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


_PROBES: dict[tuple[str, str], LevelProbe] = {}


def probe_for(weights_path: Path, device: torch.device) -> LevelProbe:
    """The process's probe for these weights on this device, built on first use."""
    key = (str(Path(weights_path).resolve()), str(device))
    if key not in _PROBES:
        _PROBES[key] = LevelProbe(weights_path, device)
    return _PROBES[key]


class RunLevels:
    """A run's readings: at its start, every `sampling.every` engine steps while it serves (their
    time taken off the run's clock), and at its end. Each reading records `engine_s`, the engine's
    clock seconds since the reading before (0 at the start; set once `mark` gives the clock)."""

    def __init__(self, weights_path: Path, device: torch.device, sampling: Sampling = SPARSE) -> None:
        self.t_wall = time.perf_counter()
        built = len(_PROBES)
        self.probe = probe_for(weights_path, device)
        self.setup_s = self.probe.setup_s if len(_PROBES) > built else 0.0  # paid once a process
        self.sampling, self.off_clock_s = sampling, 0.0
        self.last: float | None = None  # the engine clock after the latest reading
        self.readings = [{**self.probe.reading(sampling.ends_repeats, where="start"), "engine_s": 0.0}]

    @property
    def every(self) -> int:
        return self.sampling.every

    def mark(self, now: float) -> None:
        """The engine clock as the run starts serving (its first reading's interval begins)."""
        self.last = now

    def _since(self, now: float) -> float | None:
        return None if self.last is None else max(0.0, now - self.last)

    def between_steps(self, n_steps: int, clock: Any) -> float:
        """After engine step `n_steps`: a reading when due; returns its seconds on `clock`."""
        if self.every <= 0 or n_steps % self.every:
            return 0.0
        t = clock()
        smp = self.sampling
        reading = self.probe.reading(repeats=smp.repeats, where=f"step {n_steps}", warmup=smp.warmup)
        self.readings.append({**reading, "engine_s": self._since(t)})
        self.last = clock()
        dt = self.last - t
        self.off_clock_s += dt
        return dt

    def finish(self, now: float | None = None) -> dict[str, Any]:
        """The end reading (`now`: the engine clock as serving ended) and the run's record."""
        engine_s = self._since(now) if now is not None else None
        end = self.probe.reading(self.sampling.ends_repeats, where="end")
        self.readings.append({**end, "engine_s": engine_s})
        return record(self.readings, self.setup_s, time.perf_counter() - self.t_wall,
                      average=self.sampling.average, every_steps=self.every)
