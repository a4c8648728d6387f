"""What a trace's records must mean, beyond their JSON types (see docs/input-contract.md):
counts consistent with k, accepted drafts a prefix of the drafted ones, overlaps fractions,
times finite and non-negative. Every failure is a `TraceError` naming the file, line and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mtpsim.errors import TraceError
from mtpsim.inputs import MiB
from mtpsim.result import PHASES
from mtpsim.trace_records import TraceRequest, TraceStep

MAX_K = 64  # num_speculative_tokens a trace may declare (as the spec allows)
MAX_TOPK = 10_000_000
MAX_TRACE_BYTES = 512 * MiB


def _fail(source: Path, where: str, key: str, expected: str) -> TraceError:
    return TraceError(source, f"{where}: {key}" if key else where, expected)


def get(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str,
         source: Path) -> Any:
    v = obj.get(key)
    if not isinstance(v, kind) or isinstance(v, bool):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _fail(source, where, key, f"expected {name}, got {short(v)}")
    return v


def short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def read_int(obj: dict[str, Any], key: str, where: str, source: Path, lo: int, hi: int) -> int:
    v = get(obj, key, int, where, source)
    if not lo <= v <= hi:
        raise _fail(source, where, key, f"expected an integer in [{lo}, {hi}], got {v}")
    return v


# One engine step's phase (or shadow) time: ten minutes is far past any step of any engine here;
# a run's clock (time_s): ten days. A bigger number is a unit error, and squaring it in the
# cost fit overflows.
MAX_STEP_S = 600.0
MAX_RUN_S = 864_000.0


def _seconds(v: Any, key: str, where: str, source: Path, most: float = MAX_STEP_S) -> float:
    if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v <= most:
        raise _fail(source, where, key, f"expected seconds in 0..{most:g}, got {short(v)}")
    return float(v)


def _list(obj: dict[str, Any], key: str, where: str, source: Path, max_len: int,
          lo: float, hi: float, integer: bool) -> list[Any]:
    v = get(obj, key, list, where, source)
    kind = "integers" if integer else "numbers"
    if len(v) > max_len or any(
            not isinstance(x, int | float) or isinstance(x, bool) or (integer and not isinstance(x, int))
            or not lo <= x <= hi for x in v):
        raise _fail(source, where, key, f"expected at most {max_len} {kind} in [{lo:g}, {hi:g}], "
                    f"got {short(v)}")
    return v


def _attention(obj: dict[str, Any], where: str, source: Path) -> dict[str, float]:
    att = obj.get("attention", {})
    if (not isinstance(att, dict) or not set(att) <= set(PHASES)
            or any(not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v <= MAX_STEP_S
                   for v in att.values())):
        raise TraceError(source, f"{where}: attention", f"expected an object of seconds in "
                         f"0..{MAX_STEP_S:g} keyed by {', '.join(PHASES)}")
    return {p: float(v) for p, v in att.items()}


def _request(r: Any, k: int, where: str, source: Path) -> TraceRequest:
    """One verified request: `drafted` <= k, `accepted` one 0/1 per draft and a prefix of ones
    (vLLM's marginal counting), `overlap` fractions for at most k - 1 draft steps."""
    if not isinstance(r, dict):
        raise _fail(source, where, "requests", "expected objects")
    drafted = read_int(r, "drafted", where, source, 0, k)
    accepted = _list(r, "accepted", where, source, drafted, 0, 1, integer=True)
    if len(accepted) != drafted or any(b > a for a, b in zip(accepted, accepted[1:], strict=False)):
        raise _fail(source, where, "accepted", f"expected {drafted} (drafted) 0/1 flags, ones "
                    f"first (draft i counts only if drafts 0..i-1 were accepted), got {short(accepted)}")
    return TraceRequest(
        id=get(r, "id", str, where, source),
        context_len=read_int(r, "context_len", where, source, 1, 10**9),
        drafted=drafted, accepted=accepted,
        overlap=[float(o) for o in _list(r, "overlap", where, source, max(k - 1, 0), 0, 1,
                                         integer=False)])


def step(obj: Any, k: int, where: str, source: Path) -> TraceStep:
    if not isinstance(obj, dict):
        raise TraceError(source, where, "expected a JSON object (one engine step)")
    phases = get(obj, "phases", dict, where, source)
    if set(phases) != set(PHASES):
        raise _fail(source, where, "phases", f"expected seconds for {', '.join(PHASES)}")
    reqs = [_request(r, k, where, source) for r in get(obj, "requests", list, where, source)]
    num_reqs = read_int(obj, "num_reqs", where, source, 0, 10**9)
    if num_reqs != len(reqs):
        raise _fail(source, where, "num_reqs", f"expected the number of requests ({len(reqs)}), "
                    f"got {num_reqs}")
    calls = _list(obj, "mtp_indexer_calls", where, source, k, 0, 10**9, integer=True)
    if len(calls) not in (0, k):
        raise _fail(source, where, "mtp_indexer_calls",
                    f"expected one count per draft step ({k}) or none, got {len(calls)}")
    return TraceStep(
        step=read_int(obj, "step", where, source, 0, 10**12),
        time_s=_seconds(obj.get("time_s"), "time_s", where, source, MAX_RUN_S),
        num_reqs=num_reqs,
        num_prefills=read_int(obj, "num_prefills", where, source, 0, 10**9),
        phases={p: _seconds(phases[p], f"phases.{p}", where, source) for p in PHASES},
        shadow_s=_seconds(obj.get("shadow_s"), "shadow_s", where, source),
        mtp_indexer_calls=calls, requests=reqs, attention=_attention(obj, where, source))
