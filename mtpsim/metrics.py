"""Metric formulas exactly as vLLM defines them; shared by the simulator, real runs and compare.

Spec-decode counters (Prometheus `vllm:spec_decode_*`):
    acceptance rate    = accepted / draft_tokens
    acceptance length  = 1 + accepted / drafts
    position i rate    = accepted_per_pos[i] / drafts      (marginal: counts only if 0..i accepted)
    conditional a_i    = m_i / m_(i-1), with m_(-1) = 1
Latency metrics follow `vllm bench serve` (`calculate_metrics`): TPOT = (e2el - ttft) / (out - 1),
ITL = gaps between streamed chunks, percentiles by linear interpolation (numpy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from mtpsim.dataclass import dataclass

if TYPE_CHECKING:
    from mtpsim.request_record import RequestRecord

PERCENTILES = (90, 99)
LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")


@dataclass(slots=True)
class SpecDecodeCounters:
    """The four vLLM spec-decode counters; `delta` gives what happened between two scrapes."""

    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    accepted_per_pos: list[int] = field(default_factory=list)

    def add(self, num_drafted: int, num_accepted: int) -> None:
        """Record one draft of `num_drafted` tokens whose first `num_accepted` were accepted."""
        if len(self.accepted_per_pos) < num_drafted:
            self.accepted_per_pos.extend([0] * (num_drafted - len(self.accepted_per_pos)))
        self.num_drafts += 1
        self.num_draft_tokens += num_drafted
        self.num_accepted_tokens += num_accepted
        for i in range(num_accepted):
            self.accepted_per_pos[i] += 1

    def delta(self, before: SpecDecodeCounters) -> SpecDecodeCounters:
        n = max(len(self.accepted_per_pos), len(before.accepted_per_pos))
        a = self.accepted_per_pos + [0] * (n - len(self.accepted_per_pos))
        b = before.accepted_per_pos + [0] * (n - len(before.accepted_per_pos))
        return SpecDecodeCounters(
            self.num_drafts - before.num_drafts,
            self.num_draft_tokens - before.num_draft_tokens,
            self.num_accepted_tokens - before.num_accepted_tokens,
            [x - y for x, y in zip(a, b, strict=True)],
        )

    def to_bench_keys(self) -> dict[str, float | int | list[float]]:
        """The `vllm bench serve --save-result` spec-decode keys (rate in percent, positions as fractions)."""
        return {
            "spec_decode_acceptance_rate": 100.0 * acceptance_rate(self),
            "spec_decode_acceptance_length": acceptance_length(self),
            "spec_decode_num_drafts": self.num_drafts,
            "spec_decode_draft_tokens": self.num_draft_tokens,
            "spec_decode_accepted_tokens": self.num_accepted_tokens,
            "spec_decode_per_position_acceptance_rates": per_position_rates(self),
        }


def acceptance_rate(c: SpecDecodeCounters) -> float:
    return c.num_accepted_tokens / c.num_draft_tokens if c.num_draft_tokens else float("nan")


def acceptance_length(c: SpecDecodeCounters) -> float:
    return 1.0 + c.num_accepted_tokens / c.num_drafts if c.num_drafts else float("nan")


def per_position_rates(c: SpecDecodeCounters) -> list[float]:
    return [m / c.num_drafts for m in c.accepted_per_pos] if c.num_drafts else []


def marginal_to_conditional(marginal: Sequence[float]) -> list[float]:
    """vLLM's per-position rates m_i = P(0..i accepted) -> a_i = P(i accepted | 0..i-1 accepted)."""
    out, prev = [], 1.0
    for i, m in enumerate(marginal):
        if not 0.0 <= m <= prev + 1e-12:
            raise ValueError(f"position {i}: marginal rate {m} must lie in [0, {prev}]")
        out.append(m / prev if prev > 0 else 0.0)
        prev = m
    return out


def conditional_to_marginal(conditional: Sequence[float]) -> list[float]:
    out, prev = [], 1.0
    for i, a in enumerate(conditional):
        if not 0.0 <= a <= 1.0:
            raise ValueError(f"position {i}: conditional rate {a} must lie in [0, 1]")
        prev *= a
        out.append(prev)
    return out


def expected_acceptance_length(marginal: Sequence[float]) -> float:
    """E[tokens per verification step] = 1 + sum_i m_i (the bonus/corrected token plus accepted drafts)."""
    return 1.0 + float(sum(marginal))


def median(values: np.ndarray) -> float:
    """np.median of a 1-D array, bit for bit, without the import of numpy.ma that np.median and
    np.percentile make on first use (~0.02 CPU s, a tenth of a short simulate's start-up): the
    middle order statistic, or the two middle ones added and halved as np.mean does. An empty
    array or one holding NaN is left to numpy."""
    v = np.asarray(values, dtype=float).ravel()
    if not v.size or np.isnan(v).any():
        return float(np.median(v))
    h = v.size // 2
    if v.size % 2:
        return float(np.partition(v, h)[h])
    part = np.partition(v, (h - 1, h))
    return float((part[h - 1] + part[h]) / 2.0)


def percentile(values: np.ndarray, p: float) -> float:
    """np.percentile(values, p) (linear method) of a 1-D array, bit for bit, as `median` is:
    the virtual index (n - 1) * p / 100 and numpy's two-sided interpolation between its
    neighbours."""
    v = np.asarray(values, dtype=float).ravel()
    if not v.size or np.isnan(v).any():
        return float(np.percentile(v, p))
    index = (v.size - 1) * np.true_divide(p, 100)
    lo = int(np.floor(index))
    if index >= v.size - 1:
        return float(np.partition(v, -1)[-1])
    part = np.partition(v, (lo, lo + 1))
    a, b = part[lo], part[lo + 1]
    t = index - lo
    diff = b - a
    return float(b - diff * (1 - t) if t >= 0.5 else a + diff * t)


def _stats(name: str, values_s: np.ndarray, out: dict[str, float]) -> None:
    v = values_s * 1000.0 if values_s.size else np.zeros(1)
    out[f"mean_{name}_ms"] = float(np.mean(v))
    out[f"median_{name}_ms"] = median(v)
    out[f"std_{name}_ms"] = float(np.std(v))
    for p in PERCENTILES:
        out[f"p{p}_{name}_ms"] = percentile(v, p)


def _run_stats(name: str, values_s: np.ndarray, counts: np.ndarray, out: dict[str, float]) -> None:
    """`_stats` of `values_s[j]` repeated `counts[j]` times, without expanding the runs: the
    same order statistics and linear interpolation as np.percentile (equal to rounding)."""
    if not values_s.size or np.all(counts == 1):
        _stats(name, values_s, out)
        return
    keep = counts > 0
    order = np.argsort(values_s[keep])
    v, c = values_s[keep][order] * 1000.0, counts[keep][order]
    total = int(c.sum())
    ends = np.cumsum(c)  # ranks [ends - c, ends) hold v

    def at(q: float) -> float:
        h = (total - 1) * q / 100.0
        lo, hi = v[np.searchsorted(ends, [np.floor(h), np.ceil(h)], side="right")]
        return float(lo + (hi - lo) * (h - np.floor(h)))

    mean = float((v * c).sum() / total)  # no BLAS call: it can stall on a busy machine
    out[f"mean_{name}_ms"] = mean
    out[f"median_{name}_ms"] = at(50.0)
    out[f"std_{name}_ms"] = float(np.sqrt((c * (v - mean) ** 2).sum() / total))
    for p in PERCENTILES:
        out[f"p{p}_{name}_ms"] = at(p)


def serving_metrics(requests: Sequence[RequestRecord], duration_s: float) -> dict[str, float]:
    """`vllm bench serve` metrics for completed requests over a run of `duration_s` seconds."""
    f = np.fromiter
    return latency_metrics(
        f((r.input_len for r in requests), np.int64), f((r.output_len for r in requests), np.int64),
        f((r.arrival_s for r in requests), float), f((r.first_token_s for r in requests), float),
        f((r.finish_s for r in requests), float),
        f((g for r in requests for g in r.itl_s), float),
        f((c for r in requests for c in r.itl_count), np.int64), duration_s)


def latency_metrics(input_len: np.ndarray, output_len: np.ndarray, arrival_s: np.ndarray,
                    first_token_s: np.ndarray, finish_s: np.ndarray, itl_s: np.ndarray,
                    itl_count: np.ndarray, duration_s: float) -> dict[str, float]:
    """`serving_metrics` from per-request arrays (RequestRecord's fields) and all requests'
    ITL runs (values and counts), e.g. straight from a simulator's state."""
    if duration_s <= 0:
        raise ValueError("duration must be positive")
    total_in, total_out = int(input_len.sum()), int(output_len.sum())
    n = int(input_len.size)
    out: dict[str, float] = {
        "duration": duration_s,
        "completed": n,
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": n / duration_s,
        "output_throughput": total_out / duration_s,
        "total_token_throughput": (total_in + total_out) / duration_s,
    }
    ttft, e2el = first_token_s - arrival_s, finish_s - arrival_s
    many = output_len > 1
    _stats("ttft", ttft, out)
    _stats("tpot", (e2el[many] - ttft[many]) / (output_len[many] - 1), out)
    _run_stats("itl", itl_s, itl_count, out)
    _stats("e2el", e2el, out)
    return out


def counters_from_requests(requests: Sequence[RequestRecord]) -> SpecDecodeCounters:
    c = SpecDecodeCounters()
    for r in requests:
        c.num_drafts += r.num_drafts
        c.num_draft_tokens += r.num_draft_tokens
        c.num_accepted_tokens += r.num_accepted_tokens
        if len(c.accepted_per_pos) < len(r.accepted_per_pos):
            c.accepted_per_pos.extend([0] * (len(r.accepted_per_pos) - len(c.accepted_per_pos)))
        for i, m in enumerate(r.accepted_per_pos):
            c.accepted_per_pos[i] += m
    return c
