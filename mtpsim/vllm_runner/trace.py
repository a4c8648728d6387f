"""The plugin's per-process trace rows (JSON Lines) -> an mtpsim Trace (`mtpsim.trace`).

Rows: `{"kind": "verify", "call": c, "time_s", "req", "context_len", "drafted", "accepted"}`
written when propose() call c starts (the verdict on the drafts of call c-1), and
`{"kind": "overlap", "call": c, "req", "step", "overlap"}` for the drafts call c makes.
Phase timings are not measured inside vLLM: they are zero, and the header says so.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from mtpsim.result import PHASES
from mtpsim.trace import Trace
from mtpsim.trace_records import TraceMeta, TraceRequest, TraceStep

TRACE_GLOB = "vllm-trace-*.jsonl"


def read_rows(folder: Path) -> list[dict[str, Any]]:
    """Rows of the process that wrote the most (TP rank 0 is the only writer)."""
    best: list[dict[str, Any]] = []
    for path in sorted(folder.glob(TRACE_GLOB)):
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a process killed mid-write: keep what came before
        if len(rows) > len(best):
            best = rows
    return best


def truncated_processes(folder: Path) -> list[str]:
    """Why the plugin's files in `folder` may be incomplete: a process whose counts were never
    written by its exit flush (killed: everything after its last periodic flush, up to
    FLUSH_EVERY_S, is lost), or whose trace file ends mid-row."""
    from mtpsim.vllm_plugin.counts import read_counts

    out = [f"process {c.pid} was killed: its counts and trace rows stop at its last periodic "
           "flush" for c in read_counts(folder) if not c.final]
    for path in sorted(folder.glob(TRACE_GLOB)):
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            out.append(f"{path.name} ends mid-row (the writer was killed while writing)")
    return out


def rows_to_trace(rows: list[dict[str, Any]], policy: str, k: int, index_topk: int,
                  meta: TraceMeta) -> Trace:
    overlaps: dict[tuple[int, str], dict[int, float]] = defaultdict(dict)
    verifies: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("kind") == "overlap":
            overlaps[(int(r["call"]), str(r["req"]))][int(r["step"])] = float(r["overlap"])
        elif r.get("kind") == "verify":
            verifies[int(r["call"])].append(r)
    steps = []
    for call in sorted(verifies):
        reqs = []
        for r in verifies[call]:
            drafted, accepted = int(r["drafted"]), int(r["accepted"])
            ov = overlaps.get((call - 1, str(r["req"])), {})
            reqs.append(TraceRequest(id=str(r["req"]), context_len=int(r["context_len"]),
                                     drafted=drafted,
                                     accepted=[int(i < accepted) for i in range(drafted)],
                                     overlap=[ov[s] for s in sorted(ov)]))
        steps.append(TraceStep(step=call, time_s=float(verifies[call][0].get("time_s", 0.0)),
                               num_reqs=len(reqs), num_prefills=0,
                               phases=dict.fromkeys(PHASES, 0.0), shadow_s=0.0,
                               mtp_indexer_calls=[], requests=reqs))
    meta = meta.copy(phases="not measured inside vLLM (zeros)")
    return Trace(engine="vllm", policy=policy, num_speculative_tokens=k, index_topk=index_topk,
                 steps=steps, meta=meta)
