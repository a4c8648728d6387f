"""A trace's meta, step and request records (the file format: docs/trace-format.md), below both the
trace file (mtpsim.trace) and the checks that build them from JSON (mtpsim.trace_check)."""

from __future__ import annotations

from dataclasses import field
from typing import Any, ClassVar

from mtpsim.dataclass import dataclass
from mtpsim.records import Record


@dataclass(slots=True)
class TraceRequest:
    """One request's verification in a step. `accepted[i]` is 1 when drafts 0..i were all
    accepted (vLLM's marginal per-position counting); `overlap[s-1]` is, for draft step s >= 1
    that produced these drafts, |used top-k ∩ fresh top-k| / |fresh top-k| of the MTP layer."""

    id: str
    context_len: int  # tokens in context before this verification (prompt + output so far)
    drafted: int
    accepted: list[int]
    overlap: list[float] = field(default_factory=list)


@dataclass(slots=True)
class TraceStep:
    step: int
    time_s: float  # step start, seconds from the engine's start
    num_reqs: int  # requests verified in this step
    num_prefills: int  # requests admitted and prefilled in this step
    phases: dict[str, float]  # PHASES -> seconds (shadow computation excluded)
    shadow_s: float  # off-the-clock fresh top-k computed for the overlap figures
    mtp_indexer_calls: list[int]  # MTP indexer invocations per draft step 0..k-1
    requests: list[TraceRequest]
    # optional: seconds of each phase spent in the top-k-wide sparse attention (the reference
    # engine records it; phases without any are left out); lets the fit price top-k apart
    attention: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class TraceMeta(Record):
    """`Trace.meta`: what a trace says about the run that wrote it."""

    WHERE: ClassVar[str] = "line 1: meta"
    # -- the reference engine (mtpsim.engine.engine, then mtpsim.engine.runner)
    model: dict[str, Any] | None = None
    device: str | None = None
    dtype: str | None = None
    threads: int | None = None
    max_num_seqs: int | None = None
    experiment: str | None = None
    seed: int | None = None
    weights: str | None = None
    context_range: list[int] | None = None  # the experiment's nominal [lo, hi] context
    clock: str | None = None
    temperature: float | None = None
    machine: dict[str, Any] | None = None
    # -- served runs (mtpsim.vllm_runner)
    note: str | None = None
    source: str | None = None
    phases: str | None = None
    truncated: list[str] | None = None
    # -- run-real's rounds (mtpsim.real.run, mtpsim.rounds)
    rounds: int | None = None
    probe: list[Any] | None = None
    level: dict[str, Any] | None = None  # in-engine level probe record (mtpsim.engine.level)
