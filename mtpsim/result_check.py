"""What a result file's figures must mean, beyond their JSON types: metrics finite and
non-negative, acceptance figures that agree with the counters they come from (accepted <=
drafted, per-position rates summing to the acceptance length), per-request records whose times
run forward and whose per-position counts sum to their accepted tokens. Every failure is a
`ResultError` naming the file and the field."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from mtpsim.errors import ResultError
from mtpsim.request_record import RequestRecord

RATES_KEY = "spec_decode_per_position_acceptance_rates"
COUNTS = ("completed", "total_input_tokens", "total_output_tokens", "spec_decode_num_drafts",
           "spec_decode_draft_tokens", "spec_decode_accepted_tokens")
# Rounding a vLLM table to 2-4 digits leaves this much disagreement between its figures.
_LENGTH_TOL = 0.01
_RATE_TOL_PCT = 0.1
MAX_REQUESTS = 1_000_000


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def is_metric_key(key: str) -> bool:
    """Keys whose values compare and the report print as figures."""
    return (key in COUNTS or key == "duration" or key.endswith(("_ms", "_throughput"))
            or (key.startswith("spec_decode_") and key != RATES_KEY))


def check_metrics(metrics: Mapping[str, Any], source: str | Path) -> dict[str, Any]:
    """The metrics with null figures dropped (read as missing); a bad figure is a ResultError."""
    out: dict[str, Any] = {}
    for key, v in metrics.items():
        if v is None:
            continue
        if is_metric_key(key):
            if not _is_num(v) or v < 0:
                raise ResultError(source, key, f"expected a non-negative finite number, got {_short(v)}")
            if key in COUNTS and v != int(v):
                raise ResultError(source, key, f"expected a whole count, got {v}")
        elif key == RATES_KEY and (not isinstance(v, list) or len(v) > 64 or not all(
                _is_num(x) and 0 <= x <= 1 for x in v)):
            raise ResultError(source, key, f"expected at most 64 rates in [0, 1], got {_short(v)}")
        out[key] = v
    _check_counters(out, source)
    return out


def _check_counters(m: Mapping[str, Any], source: str | Path) -> None:
    drafts, tokens = m.get("spec_decode_num_drafts"), m.get("spec_decode_draft_tokens")
    accepted = m.get("spec_decode_accepted_tokens")
    if tokens is not None and accepted is not None and accepted > tokens:
        raise ResultError(source, "spec_decode_accepted_tokens", f"expected at most "
                          f"spec_decode_draft_tokens ({tokens:g}), got {accepted:g}")
    if drafts is not None and tokens is not None and tokens < drafts:
        raise ResultError(source, "spec_decode_draft_tokens", f"expected at least "
                          f"spec_decode_num_drafts ({drafts:g}), got {tokens:g}")
    rates = m.get(RATES_KEY)
    if rates and any(b > a + 1e-9 for a, b in zip(rates, rates[1:], strict=False)):
        raise ResultError(source, RATES_KEY, "expected non-increasing marginal rates (position i "
                          f"counts only when 0..i-1 were accepted), got {_short(rates)}")
    if not drafts or accepted is None:
        return
    per_draft = accepted / drafts
    length = m.get("spec_decode_acceptance_length")
    if length is not None and abs(1 + per_draft - length) > _LENGTH_TOL:
        raise ResultError(source, "spec_decode_acceptance_length", "expected 1 + accepted / drafts "
                          f"({1 + per_draft:.4f}), got {length:g}")
    if rates and abs(sum(rates) - per_draft) > _LENGTH_TOL:
        raise ResultError(source, RATES_KEY, f"expected rates summing to accepted / drafts "
                          f"({per_draft:.4f}), got {sum(rates):.4f}")
    rate = m.get("spec_decode_acceptance_rate")
    if rate is not None and tokens and abs(100 * accepted / tokens - rate) > _RATE_TOL_PCT:
        raise ResultError(source, "spec_decode_acceptance_rate", "expected 100 x accepted / "
                          f"draft tokens ({100 * accepted / tokens:.2f}), got {rate:g}")


def check_object(v: Any, key: str, source: str | Path) -> dict[str, Any]:
    """An optional JSON object field (`spec`, `extra`, `phases`): null reads as empty."""
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ResultError(source, key, f"expected an object, got {_short(v)}")
    return dict(v)


def check_phases(v: Any, source: str | Path) -> dict[str, float]:
    phases = check_object(v, "phases", source)
    for k, x in phases.items():
        if not _is_num(x) or x < 0:
            raise ResultError(source, f"phases.{k}", f"expected non-negative seconds, got {_short(x)}")
    return {k: float(x) for k, x in phases.items()}


_RECORD_FIELDS = {f.name for f in fields(RequestRecord)}
_RECORD_INTS = ("input_len", "output_len", "num_drafts", "num_draft_tokens", "num_accepted_tokens")


def check_requests(v: Any, source: str | Path) -> list[RequestRecord] | None:
    if v is None:
        return None
    if not isinstance(v, list) or len(v) > MAX_REQUESTS:
        raise ResultError(source, "requests", f"expected a list of at most {MAX_REQUESTS:,} "
                          "request records or null")
    return [_record(r, f"requests[{i}]", source) for i, r in enumerate(v)]


def _record(r: Any, where: str, source: str | Path) -> RequestRecord:
    if not isinstance(r, dict):
        raise ResultError(source, where, "expected an object")
    missing = {"request_id", "input_len", "output_len", "arrival_s", "first_token_s",
               "finish_s"} - set(r)
    unknown = set(r) - _RECORD_FIELDS
    if missing or unknown:
        raise ResultError(source, where, f"expected the fields {', '.join(sorted(_RECORD_FIELDS))}"
                          f" (missing {', '.join(sorted(missing)) or '-'}, unknown "
                          f"{', '.join(sorted(unknown)) or '-'})")

    def bad(key: str, expected: str) -> ResultError:
        return ResultError(source, f"{where}.{key}", f"expected {expected}, got {_short(r.get(key))}")

    if not isinstance(r["request_id"], str):
        raise bad("request_id", "a string")
    for key in _RECORD_INTS:
        x = r.get(key, 0)
        if not isinstance(x, int) or isinstance(x, bool) or not 0 <= x <= 10**12:
            raise bad(key, "a non-negative integer")
    times = [r["arrival_s"], r["first_token_s"], r["finish_s"]]
    if not all(_is_num(t) for t in times) or not times[0] <= times[1] <= times[2]:
        raise bad("finish_s", "finite times with arrival_s <= first_token_s <= finish_s")
    itl, count = r.get("itl_s", []), r.get("itl_count", [])
    if (not isinstance(itl, list) or not isinstance(count, list) or len(itl) != len(count)
            or not all(_is_num(x) and x >= 0 for x in itl)
            or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in count)):
        raise bad("itl_s", "itl_s and itl_count of one length: non-negative seconds and counts")
    per_pos = r.get("accepted_per_pos", [])
    drafts, accepted = r.get("num_drafts", 0), r.get("num_accepted_tokens", 0)
    if (not isinstance(per_pos, list) or len(per_pos) > 64
            or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= drafts
                       for c in per_pos)):
        raise bad("accepted_per_pos", f"at most 64 counts in [0, num_drafts ({drafts})]")
    if per_pos and sum(per_pos) != accepted:
        raise bad("accepted_per_pos", f"counts summing to num_accepted_tokens ({accepted})")
    if accepted > r.get("num_draft_tokens", 0):
        raise bad("num_accepted_tokens", "at most num_draft_tokens")
    return RequestRecord(**r)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
