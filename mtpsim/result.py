"""The one result format that simulated and real runs share (one file per run and policy).

On disk a Result is JSON whose top level uses `vllm bench serve --save-result` key names where
they overlap (duration, output_throughput, median_tpot_ms, spec_decode_acceptance_length, ...),
plus mtpsim's own fields (schema, version, mode, policy, seed, phases, spec, requests).
A plain vLLM `--save-result` JSON reads as a Result with mode "vllm-bench" and no mtpsim fields.
"""

from __future__ import annotations

import json
from dataclasses import asdict, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim import __version__
from mtpsim.dataclass import dataclass
from mtpsim.errors import ResultError
from mtpsim.inputs import MiB, loads_json, read_text
from mtpsim.metrics import SpecDecodeCounters, counters_from_requests, serving_metrics
from mtpsim.records import RunExtra

if TYPE_CHECKING:
    from mtpsim.request_record import RequestRecord

SCHEMA = "mtpsim-result"
VERSION = 1
MODES = ("simulate", "reference", "vllm", "vllm-bench")

# Engine-step phases, named the same in the cost model, the engine, the trace and the report.
PHASES = (
    "prefill",  # target forward over prompt chunks
    "verify",  # target forward over k+1 tokens per decoding request
    "draft_prefill",  # MTP draft step 0 over each request's newly verified tokens
    "draft_decode_indexer",  # MTP draft steps >= 1: lightning indexer + top-k selection
    "draft_decode_rest",  # MTP draft steps >= 1: everything else
    "rejection_sample",  # sampling and rejection
    "overhead",  # fixed per-step cost (scheduling, launch, host sync)
)

# Keys a vLLM bench JSON must have to be read as a result.
_BENCH_REQUIRED = ("duration", "completed", "output_throughput")
_MTPSIM_FIELDS = ("schema", "version", "mtpsim_version", "mode", "policy", "seed", "experiment",
                  "phases", "extra", "spec", "requests")


@dataclass(slots=True)
class Result:
    """One run of one policy. `metrics` holds the vLLM-named figures."""

    mode: str
    policy: str | None
    metrics: dict[str, Any]
    phases: dict[str, float] = field(default_factory=dict)  # mean seconds per engine step
    seed: int | None = None
    experiment: str | None = None
    spec: dict[str, Any] = field(default_factory=dict)
    extra: RunExtra = field(default_factory=RunExtra)
    requests: list[RequestRecord] | None = None
    mtpsim_version: str = __version__

    @classmethod
    def from_requests(
        cls, *, mode: str, policy: str | None, requests: list[RequestRecord], duration_s: float,
        counters: SpecDecodeCounters | None = None, **kw: Any,
    ) -> Result:
        """Build a result from per-request records (counters default to the requests' sums)."""
        metrics = serving_metrics(requests, duration_s)
        metrics.update((counters or counters_from_requests(requests)).to_bench_keys())
        return cls(mode=mode, policy=policy, metrics=metrics, requests=requests, **kw)

    def get(self, key: str, default: Any = None) -> Any:
        return self.metrics.get(key, default)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": SCHEMA, "version": VERSION,
                               "mtpsim_version": self.mtpsim_version, "mode": self.mode,
                               "policy": self.policy, "seed": self.seed,
                               "experiment": self.experiment}
        out.update(self.metrics)
        out["phases"] = self.phases
        out["extra"] = self.extra.to_json()
        out["spec"] = self.spec
        out["requests"] = None if self.requests is None else [asdict(r) for r in self.requests]
        return out

    def write(self, path: str | Path) -> None:
        from mtpsim.fileio import atomic_write_json, finite_json

        atomic_write_json(path, finite_json(self.to_json()))

    @classmethod
    def from_json(cls, obj: Any, source: str | Path = "<json>") -> Result:
        """Validate a parsed result file (types and meaning, see mtpsim.result_check)."""
        from mtpsim.result_check import check_metrics, check_object, check_phases, check_requests

        if not isinstance(obj, dict):
            raise ResultError(source, None, "expected a JSON object (an mtpsim result or a vLLM "
                              "`--save-result` file)")
        if obj.get("schema") == SCHEMA:
            if obj.get("version") != VERSION:
                raise ResultError(source, "version", f"expected {VERSION}, got {obj.get('version')!r}")
            mode = obj.get("mode")
            if mode not in MODES:
                raise ResultError(source, "mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
            for key, kind, name in (("policy", str, "a string"), ("experiment", str, "a string"),
                                    ("seed", int, "an integer")):
                v = obj.get(key)
                if v is not None and (not isinstance(v, kind) or isinstance(v, bool)):
                    raise ResultError(source, key, f"expected {name} or null, got {v!r}"[:120])
            metrics = check_metrics({k: v for k, v in obj.items() if k not in _MTPSIM_FIELDS},
                                    source)
            return cls(mode=mode, policy=obj.get("policy"), metrics=metrics,
                       phases=check_phases(obj.get("phases"), source), seed=obj.get("seed"),
                       experiment=obj.get("experiment"),
                       spec=check_object(obj.get("spec"), "spec", source),
                       extra=RunExtra.from_json(check_object(obj.get("extra"), "extra", source),
                                                source, ResultError),
                       requests=check_requests(obj.get("requests"), source),
                       mtpsim_version=str(obj.get("mtpsim_version", "?")))
        missing = [k for k in _BENCH_REQUIRED if k not in obj]
        if missing:
            raise ResultError(source, missing[0], "expected an mtpsim result (\"schema\": "
                              f"\"{SCHEMA}\") or a vLLM bench JSON with {', '.join(_BENCH_REQUIRED)}")
        for k in _BENCH_REQUIRED:
            if obj[k] is None:
                raise ResultError(source, k, "expected a number, got null")
        metrics = check_metrics({k: v for k, v in obj.items() if not isinstance(v, dict)}, source)
        return cls(mode="vllm-bench", policy=None, metrics=metrics, mtpsim_version="")


MAX_RESULT_BYTES = 256 * MiB


def load_result(path: str | Path) -> Result:
    """Read an mtpsim result or a `vllm bench serve --save-result` JSON; bad input -> ResultError."""
    path = Path(path)
    text = read_text(path, ResultError, "result file", MAX_RESULT_BYTES)
    try:
        obj = loads_json(text, path, ResultError)
    except ResultError:
        _refuse_other_kind(text, path)
        raise
    _refuse_sweep_files(obj, path)
    return Result.from_json(obj, source=path)


def _refuse_sweep_files(obj: Any, path: Path) -> None:
    """A simulated sweep's DIR/sweep.json or DIR/points/<id>.json (`compare DIR` of a
    `mtpsim sweep --out DIR`): say what it is, rather than blaming a missing `duration`."""
    if not isinstance(obj, dict) or "schema" in obj:
        return
    if {"draws_n", "summary", "draws"} <= set(obj):
        raise ResultError(path, None, "expected a result JSON (what mtpsim simulate or run-real "
                          "writes as DIR/POLICY.json), got the draws of simulate --uncertainty "
                          "(DIR/uncertainty.json): its intervals are the table it printed, or its "
                          "--json; compare reads the results of a plain simulate or run-real --out")
    point = obj.get("format") == "mtpsim-sweep-point"
    if point or ({"axes", "rows"} <= set(obj) and "engine" not in obj):
        what = "a simulated sweep's point" if point else "a simulated sweep's summary"
        raise ResultError(path, None, "expected a result JSON (what mtpsim simulate or run-real "
                          f"writes as DIR/POLICY.json), got {what}: the sweep's table already "
                          "holds every policy at every point (DIR/sweep.json; mtpsim sweep ... "
                          "--json prints it); compare reads a real sweep's --out (sweep --engine) "
                          "or a simulate or run-real --out")


def _refuse_other_kind(text: str, path: Path) -> None:
    """A file that is not JSON but one of mtpsim's other inputs (an experiment or advise
    deployment TOML, a trace's JSON Lines): say what it is and what to run, rather than
    blaming its line 1's JSON."""
    import tomllib

    expected = ("expected a result JSON (what mtpsim simulate or run-real writes as "
                "DIR/POLICY.json, or vllm bench serve --save-result)")
    first = text.lstrip().partition("\n")[0]
    try:
        head = json.loads(first)
    except (ValueError, RecursionError):
        head = None
    if isinstance(head, dict) and head.get("format") == "mtpsim-trace":
        raise ResultError(path, None, f"{expected}, got an mtpsim trace (JSON Lines): its result "
                          "is the POLICY.json beside it") from None
    try:
        doc = tomllib.loads(text)
    except (ValueError, RecursionError):
        return
    if not doc:
        return
    if "deployment" in doc:
        raise ResultError(path, None, f"{expected}, got a deployment file for mtpsim advise "
                          f"(TOML): run it with mtpsim advise {path}") from None
    out = f"runs/{path.stem}"
    raise ResultError(path, None, f"{expected}, got an experiment spec (TOML): run it first, e.g. "
                      f"mtpsim simulate {path} --out {out}, then mtpsim compare {out}") from None

