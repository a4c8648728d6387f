"""Indexer-invocation counts per draft step, and the "sharing engaged" verdict (torch-free).

Device counts (`device`: `served` and `startup`) are counted on the GPU by ops that CUDA-graph
replays run too (device_counts.py): they see served traffic under graphs. The hook counts below
run Python and are the eager cross-check. Hook counts come in three contexts: `propose` (eager
forwards of served requests; graph replays run no Python, so under CUDA graphs only eager
batches show up here), `capture` (forwards seen while vLLM records CUDA graphs at start-up: what
the graphs baked in) and `dummy` (start-up and idle runs that serve no request: profiling,
warm-up, DP-sync dummy batches).
"""

from __future__ import annotations

import json
from dataclasses import field
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass

CONTEXTS = ("propose", "capture", "dummy")
# What each context's counts came from, as the verdict says it.
SOURCES = {"device": "counted on the device, CUDA-graph replays included, from served traffic",
           "propose": "from served traffic",
           "capture": "only from CUDA-graph capture at start-up (what the graphs replay)",
           "dummy": "only from start-up runs (profiling, warm-up, dummy batches), not served "
                    "traffic"}
COUNTS_GLOB = "vllm-counts-*.json"


@dataclass(slots=True)
class StepCounts:
    """Per draft step s: MTP-layer forwards, real indexer runs, shadow indexer runs."""

    forwards: list[int] = field(default_factory=list)
    indexer: list[int] = field(default_factory=list)
    shadow: list[int] = field(default_factory=list)

    def bump(self, kind: str, step: int) -> None:
        for row in (self.forwards, self.indexer, self.shadow):  # kept the same length
            if len(row) <= step:
                row.extend([0] * (step + 1 - len(row)))
        getattr(self, kind)[step] += 1

    def at(self, kind: str, step: int) -> int:
        row: list[int] = getattr(self, kind)
        return row[step] if step < len(row) else 0

    @property
    def num_steps(self) -> int:
        return max(len(self.forwards), len(self.indexer))


@dataclass(slots=True)
class PluginCounts:
    """Everything one vLLM process counted; written as JSON by the plugin, read by the runner."""

    policy: str
    share_flag: bool | None = None  # MTPSpeculator.share_mtp_topk_indices after load
    contexts: dict[str, StepCounts] = field(default_factory=lambda: {c: StepCounts()
                                                                      for c in CONTEXTS})
    compaction_rows_checked: int = 0
    compaction_rows_wrong: int = 0
    hooked_layers: int | None = None  # MTP sparse-attention layers found at load
    compile_mode: int = 0  # vLLM's torch.compile mode
    hooks_traced: bool | None = None  # the draft model is compiled: hooks would not run
    final: bool = False  # written by the process's exit flush (else it was killed)
    pid: int = 0
    device: dict[str, StepCounts] | None = None  # served / startup, counted on the device

    @property
    def traced(self) -> bool:
        """Hooks could not count (files older than `hooks_traced` judge by the mode)."""
        return self.hooks_traced if self.hooks_traced is not None else self.compile_mode > 0

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "share_flag": self.share_flag, "pid": self.pid,
                "compaction_rows_checked": self.compaction_rows_checked,
                "compaction_rows_wrong": self.compaction_rows_wrong,
                "hooked_layers": self.hooked_layers, "compile_mode": self.compile_mode,
                "hooks_traced": self.hooks_traced, "final": self.final,
                "contexts": {c: {"forwards": s.forwards, "indexer": s.indexer,
                                 "shadow": s.shadow} for c, s in self.contexts.items()},
                "device": None if self.device is None else
                {c: {"forwards": s.forwards, "indexer": s.indexer} for c, s in self.device.items()}}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> PluginCounts:
        contexts = {c: StepCounts(list(v.get("forwards", [])), list(v.get("indexer", [])),
                                  list(v.get("shadow", [])))
                    for c, v in obj.get("contexts", {}).items()}
        for c in CONTEXTS:
            contexts.setdefault(c, StepCounts())
        dev = obj.get("device")
        device = None if not isinstance(dev, dict) else {
            c: StepCounts(list(v.get("forwards", [])), list(v.get("indexer", [])),
                          [0] * len(v.get("forwards", []))) for c, v in dev.items()}
        return cls(device=device, policy=obj["policy"], share_flag=obj.get("share_flag"), contexts=contexts,
                   compaction_rows_checked=int(obj.get("compaction_rows_checked", 0)),
                   compaction_rows_wrong=int(obj.get("compaction_rows_wrong", 0)),
                   hooked_layers=obj.get("hooked_layers"),
                   compile_mode=int(obj.get("compile_mode", 0)),
                   hooks_traced=obj.get("hooks_traced"), final=bool(obj.get("final", False)),
                   pid=int(obj.get("pid", 0)))


def read_counts(folder: str | Path) -> list[PluginCounts]:
    """Every process's counts in `folder` (none if vLLM never loaded the draft model)."""
    out = []
    for p in sorted(Path(folder).glob(COUNTS_GLOB)):
        try:
            out.append(PluginCounts.from_json(json.loads(p.read_text(encoding="utf-8"))))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a process killed mid-run leaves no partial file (atomic writes)
    return out


@dataclass(frozen=True, slots=True)
class SharingVerdict:
    engaged: bool | None  # None: no draft step >= 1 was observed running Python
    context: str | None
    detail: str

    def line(self) -> str:
        word = {True: "yes", False: "no", None: "unknown"}[self.engaged]
        source = f"; counts {SOURCES[self.context]}" if self.context in SOURCES else ""
        return f"sharing engaged: {word} ({self.detail}{source})"


def _describe(s: StepCounts) -> str:
    return ", ".join(f"step {i}: {s.at('indexer', i)}/{s.at('forwards', i)}"
                     for i in range(s.num_steps))


def sharing_verdict(counts: PluginCounts) -> SharingVerdict:
    """Did draft steps >= 1 really skip the MTP layer's indexer? Judged from the counts:
    engaged = step 0 ran the indexer on every forward and no step >= 1 ran it. Device counts
    come first: they see served traffic under CUDA graphs and compiled models."""
    served = (counts.device or {}).get("served")
    if served is not None and any(served.at("forwards", i) for i in range(1, served.num_steps)):
        return _judge("device", served, counts)
    if counts.traced:
        return SharingVerdict(None, None, f"torch.compile mode {counts.compile_mode} compiles "
                              "the draft model: module hooks would be traced, not run; count "
                              "with compilation mode 0 or --trace")
    if counts.hooked_layers == 0:
        return SharingVerdict(None, None, "the draft model has no sparse-attention layer with "
                              "skip_topk and an indexer (not a DSA model?)")
    for ctx in CONTEXTS:
        s = counts.contexts[ctx]
        if any(s.at("forwards", i) for i in range(1, s.num_steps)):
            return _judge(ctx, s, counts)
    return SharingVerdict(None, None, "no draft step >= 1 ran Python code; under CUDA graphs "
                          "only the capture counts exist and none were recorded")


def _judge(ctx: str, s: StepCounts, counts: PluginCounts) -> SharingVerdict:
    later = range(1, s.num_steps)
    step0_ok = s.at("forwards", 0) > 0 and s.at("indexer", 0) == s.at("forwards", 0)
    skipped = all(s.at("indexer", i) == 0 for i in later)
    ran = all(s.at("indexer", i) == s.at("forwards", i) for i in later)
    detail = f"{ctx}, indexer calls/MTP forwards: {_describe(s)}"
    if counts.compaction_rows_checked:
        detail += (f"; compaction wrong rows: {counts.compaction_rows_wrong}/"
                   f"{counts.compaction_rows_checked}")
    if skipped and step0_ok:
        return SharingVerdict(True, ctx, detail)
    if ran:
        return SharingVerdict(False, ctx, detail)
    return SharingVerdict(False, ctx, "inconsistent: " + detail)
