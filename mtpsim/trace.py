"""The Trace: what a real run records for the simulator (format `mtpsim-trace`, version 1).

JSON Lines, UTF-8, written atomically; see docs/trace-format.md. Line 1 is the header:

    {"format": "mtpsim-trace", "version": 1, "engine": "reference", "policy": "share",
     "num_speculative_tokens": 3, "index_topk": 64, "phases": [...], "meta": {...}}

Every further line is one engine step (a batch: verification of the running requests' drafts
and/or prefills of new ones), with batch-level phase timings in seconds and one record per
verified request:

    {"step": 7, "time_s": 1.25, "num_reqs": 4, "num_prefills": 0,
     "phases": {"prefill": 0.0, "verify": 0.031, ...}, "shadow_s": 0.002,
     "mtp_indexer_calls": [1, 0, 0], "attention": {"verify": 0.012, ...},
     "requests": [{"id": "r3", "context_len": 1290, "drafted": 3, "accepted": [1, 1, 0],
                   "overlap": [0.95, 0.91]}]}
"""

from __future__ import annotations

import json
from dataclasses import asdict, field
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import TraceError
from mtpsim.fileio import atomic_write_text, dumps
from mtpsim.inputs import loads_json, read_text
from mtpsim.policies import POLICIES
from mtpsim.result import PHASES
from mtpsim.trace_check import MAX_K, MAX_TOPK, MAX_TRACE_BYTES, get, read_int, short, step
from mtpsim.trace_records import TraceMeta, TraceStep

FORMAT = "mtpsim-trace"
VERSION = 1


@dataclass(slots=True)
class Trace:
    engine: str
    policy: str
    num_speculative_tokens: int
    index_topk: int
    steps: list[TraceStep] = field(default_factory=list)
    meta: TraceMeta = field(default_factory=TraceMeta)  # model config, device, threads, seed...

    def header(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "engine": self.engine, "policy": self.policy,
                "num_speculative_tokens": self.num_speculative_tokens,
                "index_topk": self.index_topk, "phases": list(PHASES), "meta": self.meta.to_json()}

    def write(self, path: str | Path) -> None:
        lines = [dumps(self.header())] + [dumps(asdict(s)) for s in self.steps]
        atomic_write_text(path, "\n".join(lines) + "\n")

    def accepted_per_pos(self) -> list[int]:
        out = [0] * self.num_speculative_tokens
        for s in self.steps:
            for r in s.requests:
                for i, a in enumerate(r.accepted[:len(out)]):
                    out[i] += a
        return out

    def mean_overlap(self) -> list[float | None]:
        """Mean overlap per draft step 1..k-1 over all verified requests (None: no data)."""
        sums, counts = [0.0] * (self.num_speculative_tokens - 1), [0] * (self.num_speculative_tokens - 1)
        for s in self.steps:
            for r in s.requests:
                for i, o in enumerate(r.overlap[:len(sums)]):
                    sums[i] += o
                    counts[i] += 1
        return [x / n if n else None for x, n in zip(sums, counts, strict=True)]

    def phase_totals(self) -> dict[str, float]:
        return {p: sum(s.phases.get(p, 0.0) for s in self.steps) for p in PHASES}


def _refuse_one_document(text: str, source: Path) -> None:
    """A file that is one JSON document over several lines (an mtpsim result, a vLLM bench
    JSON) rather than JSON Lines: say what it is instead of blaming its line 1."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return
    what = ("an mtpsim result; run-real writes its trace beside it as POLICY.trace.jsonl"
            if isinstance(doc, dict) and doc.get("schema") == "mtpsim-result"
            else "one JSON document over several lines")
    raise TraceError(source, "line 1", "expected a trace (JSON Lines whose line 1 is a header "
                     f"with \"format\": \"{FORMAT}\"), got {what}")


def read_trace(path: str | Path) -> Trace:
    """Read and validate a trace; any problem -> TraceError naming the file and line."""
    source = Path(path)
    text = read_text(source, TraceError, "trace file", MAX_TRACE_BYTES)
    try:
        objs = [(n, loads_json(line, source, TraceError, f"line {n}"))
                for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    except TraceError:
        _refuse_one_document(text, source)
        raise
    if not objs or not isinstance(objs[0][1], dict) or objs[0][1].get("format") != FORMAT:
        raise TraceError(source, "line 1", f"expected a header with \"format\": \"{FORMAT}\"")
    head = objs[0][1]
    if head.get("version") != VERSION:
        raise TraceError(source, "line 1: version", f"expected {VERSION}, got {short(head.get('version'))}")
    policy = get(head, "policy", str, "line 1", source)
    if policy not in POLICIES:
        raise TraceError(source, "line 1: policy", f"expected one of {', '.join(POLICIES)}, "
                         f"got {short(policy)}")
    meta = head.get("meta", {})
    if not isinstance(meta, dict):
        raise TraceError(source, "line 1: meta", f"expected an object, got {short(meta)}")
    k = read_int(head, "num_speculative_tokens", "line 1", source, 1, MAX_K)
    trace = Trace(engine=get(head, "engine", str, "line 1", source), policy=policy,
                  num_speculative_tokens=k,
                  index_topk=read_int(head, "index_topk", "line 1", source, 1, MAX_TOPK),
                  meta=TraceMeta.from_json(meta, source, TraceError))
    trace.steps = [step(obj, k, f"line {n}", source) for n, obj in objs[1:]]
    return trace
