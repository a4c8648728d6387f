"""Typed records for what a run writes beside its figures: `Result.extra` (RunExtra) and
`Trace.meta` (TraceMeta, kept in mtpsim.trace_records beside a trace's other records, so that a
run that reads no trace does not create it). Every key is declared once, here, with its type and the part that
writes it; code reads and writes attributes, never string keys.

On disk both stay JSON objects with the same key names as before: `to_json()` writes the set
fields in declaration order (None is "not recorded" and left out, except where a field says it
is written as null beside another), then any keys this version does not know, kept as they
were read (a newer file, an older field). A missing key reads as None, so old files load; a
known key of the wrong type is bad input (one line naming the file and the key).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from pathlib import Path
from typing import Any, ClassVar, Self

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError


def _null_with(key: str) -> Any:
    """A field whose null is a value (e.g. "never constrained"): written as null whenever `key` is."""
    return field(default=None, metadata={"null_with": key})


_KINDS: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "str": (str,),
                                       "bool": (bool,), "dict": (dict,), "list": (list,)}


def _outer_types(annotation: str) -> list[str]:
    """`list[float | None] | None` -> ["list", "None"]: the union's members, outer names only."""
    parts, depth, cur = [], 0, ""
    for ch in annotation:
        depth += (ch == "[") - (ch == "]")
        if ch == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [p.strip().split("[", 1)[0] for p in [*parts, cur]]


def _check(value: Any, annotation: str) -> str | None:
    """None if `value` fits the field's annotation (its outer type only), else what was expected."""
    if value is None:
        return None
    parts = [p for p in _outer_types(annotation) if p != "None"]
    kinds = tuple(t for p in parts for t in _KINDS.get(p, (object,)))
    fits = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    return None if fits else " or ".join(parts)  # JSON true is no count


@dataclass(slots=True)
class Record:
    """Declared fields plus `other` (unknown keys, kept in order); see the module docstring."""

    other: dict[str, Any] = field(default_factory=dict)
    WHERE: ClassVar[str] = ""  # the key that holds the record in its file, for error messages

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        declared = [f for f in dataclasses.fields(self) if f.name != "other"]
        for f in declared:
            value = getattr(self, f.name)
            with_key = f.metadata.get("null_with")
            if value is not None or (with_key is not None and getattr(self, with_key) is not None):
                out[f.name] = value
        out.update((k, v) for k, v in self.other.items() if k not in out)
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any], source: str | Path, error: type[UserError]) -> Self:
        known = {f.name: f for f in dataclasses.fields(cls) if f.name != "other"}
        kw: dict[str, Any] = {}
        other: dict[str, Any] = {}
        for key, value in obj.items():
            f = known.get(key)
            if f is None:
                other[key] = value
                continue
            if (want := _check(value, str(f.type))) is not None:
                raise error(source, f"{cls.WHERE}.{key}", f"expected {want}, got {value!r}"[:160])
            kw[key] = value
        return cls(other=other, **kw)

    def copy(self, **changes: Any) -> Self:
        """A copy with `changes` (None removes a field); `other` is copied, not shared."""
        return dataclasses.replace(self, other=dict(self.other), **changes)


@dataclass(slots=True)
class RunExtra(Record):
    """`Result.extra`: what one run of one policy records beyond the vLLM-named figures."""

    WHERE: ClassVar[str] = "extra"
    # -- the simulator (mtpsim.sim.simulator), in the order it has always written them
    num_steps: int | None = None
    decode_only_steps: int | None = None
    python_iterations: int | None = None
    step_saving_vs_fresh_s: float | None = None  # mean per step, the same batch priced as fresh
    phases_total_s: dict[str, float] | None = None
    acceptance_mode: str | None = None
    num_preemptions: int | None = None
    preempted_requests: int | None = None
    mean_queue_ms: float | None = None
    median_queue_ms: float | None = None
    kv_cache_tokens: int | None = _null_with("num_preemptions")  # per engine; null: not sized
    kv_cache_peak_pct: float | None = _null_with("num_preemptions")  # null: never constrained
    dp_ranks: int | None = None
    rank_requests: int | None = None  # dp > 1: records and latencies are the busiest rank's
    expected_acceptance_length: float | None = None  # on the drawn path, without draw noise
    # -- the in-process reference engine (mtpsim.engine.runner)
    engine: str | None = None
    device: str | None = None
    threads: int | None = None
    clock: str | None = None
    output_tokens_sha256: str | None = None
    weights: str | None = None
    index_topk: int | None = None
    max_num_seqs: int | None = None
    shadow_s: float | None = None
    mtp_indexer_calls_per_step: list[int] | None = None
    mean_overlap_per_step: list[float | None] | None = None
    indexer_share_of_draft_decode: float | None = _null_with("draft_share_of_step")
    draft_share_of_step: float | None = None
    # -- served engines (mtpsim.vllm_runner, mtpsim.real, mtpsim.client)
    bench_client: str | None = None
    bench_argv: list[str] | None = None
    bench_json: str | None = None
    errors: list[str] | None = None
    server_argv: list[str] | None = None
    server_env: dict[str, str] | None = None
    sharing_engaged: str | None = None  # the one-line verdict on the indexer counts
    plugin_counts: dict[str, Any] | None = None  # PluginCounts.to_json()
    trace_truncated: list[str] | None = None
    spec_decode_counters: str | None = None  # why the server's counters are missing
    engine_gauges: dict[str, Any] | None = None
    # -- run-real's rounds (mtpsim.real.run, mtpsim.rounds) and real sweeps
    weights_sha256: str | None = None
    # run-real's flags that change a run beyond its spec (--trace, --bench-client, --level-every,
    # --no-probe), as typed: the resume command a result gives repeats them (mtpsim.runs.real)
    run_flags: list[str] | None = None
    round: dict[str, Any] | None = None  # index, of, position
    probe: dict[str, Any] | None = None  # machine-speed readings before and after the run
    level: dict[str, Any] | None = None  # in-engine level probe readings (mtpsim.engine.level)
    rounds: list[dict[str, Any]] | None = None  # a pooled result: each round's summary
    output_tokens_sha256_per_round: list[str | None] | None = None
    mean_of_rounds: list[str] | None = None  # benchmarks/heldout_validation.py's averages
    mean_of_seeds: list[int] | None = None
    node: dict[str, Any] | None = None
    repeat: int | None = None
    point_id: str | None = None
