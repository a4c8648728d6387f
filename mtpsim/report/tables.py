"""Table builders; printing happens in the commands. The tables are `mtpsim.plainprint.Table`s:
printed to a file without importing rich, to a terminal as the rich tables they stand for."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mtpsim.plainprint import Styled, Table
from mtpsim.report.fit import footnote_dashes
from mtpsim.report.numbers import metric_value, signed
from mtpsim.result import PHASES, Result

# (label, key, kind): kind "rel" -> delta in %, "pp" -> percentage points, "abs" -> difference
PR_ROWS: tuple[tuple[str, str, str], ...] = (
    ("Request throughput (req/s)", "request_throughput", "rel"),
    ("Output token throughput (tok/s)", "output_throughput", "rel"),
    ("Total token throughput (tok/s)", "total_token_throughput", "rel"),
    ("Median TTFT (ms)", "median_ttft_ms", "rel"),
    ("P90 TTFT (ms)", "p90_ttft_ms", "rel"),
    ("Median TPOT (ms)", "median_tpot_ms", "rel"),
    ("P90 TPOT (ms)", "p90_tpot_ms", "rel"),
    ("Median ITL (ms)", "median_itl_ms", "rel"),
    ("P90 ITL (ms)", "p90_itl_ms", "rel"),
    ("Median E2EL (ms)", "median_e2el_ms", "rel"),
    ("P90 E2EL (ms)", "p90_e2el_ms", "rel"),
    ("Acceptance rate (%)", "spec_decode_acceptance_rate", "pp"),
    ("Acceptance length", "spec_decode_acceptance_length", "abs"),
    ("Drafts", "spec_decode_num_drafts", "rel"),
    ("Draft tokens", "spec_decode_draft_tokens", "rel"),
    ("Accepted tokens", "spec_decode_accepted_tokens", "rel"),
)


def _value(res: Result, key: str) -> float:
    if key.startswith("pos"):
        rates = res.get("spec_decode_per_position_acceptance_rates") or []
        i = int(key[3:])
        return 100.0 * rates[i] if i < len(rates) else math.nan
    v = res.get(key)
    return float(v) if isinstance(v, int | float) else math.nan


def _rows(results: Mapping[str, Result]) -> list[tuple[str, str, str]]:
    npos = max((len(r.get("spec_decode_per_position_acceptance_rates") or [])
                for r in results.values()), default=0)
    return [*PR_ROWS, *[(f"Pos {i} (%)", f"pos{i}", "pp") for i in range(npos)]]


def _delta(a: float, b: float, kind: str) -> str:
    if math.isnan(a) or math.isnan(b):
        return "-"
    if kind == "pp":
        return signed(b - a, 2, " pp")
    if kind == "abs":
        return signed(b - a, 3)
    return signed(100.0 * (b - a) / a, 2, " %") if a else "-"


def pr_table(results: Mapping[str, Result], title: str = "") -> Table:
    """Metric rows, one column per policy, one delta column per policy against the first."""
    names = list(results)
    base = names[0]
    t = Table(title=title or None, title_justify="left")
    t.add_column("Metric")
    for n in names:
        t.add_column(n, justify="right")
    for n in names[1:]:
        t.add_column(f"Δ {n}\nvs {base}", justify="right")
    for label, key, kind in _rows(results):
        vals = [_value(results[n], key) for n in names]
        t.add_row(label, *[metric_value(v, key) for v in vals],
                  *[_delta(vals[0], v, kind) for v in vals[1:]])
    return footnote_dashes(t, "that result does not report the metric, so there is no value or delta")


def phase_table(results: Mapping[str, Result]) -> Table:
    """Mean time per engine step of each phase (ms), per policy, and the saving against the first."""
    names = list(results)
    base = names[0]
    t = Table(title="Mean step time per phase (ms per engine step)", title_justify="left",
              caption_justify="left")
    # Each run's own mean step: the runs' batches differ (a policy that accepts fewer drafts
    # runs more, smaller steps), so this Δ is not the summary line's "saves ... per engine step",
    # which prices the same batches under both policies.
    t.caption = ("Δ: difference of the runs' mean steps, whose batches differ; the per-step "
                 "saving on the same batch is in the line above the table")
    t.add_column("Phase")
    for n in names:
        t.add_column(n, justify="right")
    for n in names[1:]:
        t.add_column(f"Δ {n}\nvs {base} (µs)", justify="right")
    rows = [(p, [results[n].phases.get(p, math.nan) for n in names]) for p in PHASES]
    rows.append(("total", [sum(results[n].phases.get(p, 0.0) for p in PHASES) for n in names]))
    for phase, vals in rows:
        t.add_row(phase, *[f"{1e3 * v:.3f}" for v in vals],
                  *[signed(1e6 * (v - vals[0]), 1) for v in vals[1:]])
    return t


def prefill_table(exp: Any, policy: str) -> Table:
    """The roofline's target prefill of one prompt of `workload.input_len` tokens alone on the
    engine (bs1), chunked at `max_num_batched_tokens`: ms per part, summed over the chunks."""
    from mtpsim.models.roofline import CostModel

    cost = CostModel(exp, policy)
    n, chunk = int(exp.workload.input_len), exp.engine.max_num_batched_tokens
    parts: dict[str, float] = {}
    for start in range(0, n, chunk):
        for name, sec in cost.prefill_parts(min(chunk, n - start), start).items():
            if name.startswith("LM head") and start + chunk < n:
                continue
            parts[name] = parts.get(name, 0.0) + float(sec)
    chunks = -(-n // chunk)
    t = Table(title=f"Target prefill of one {n:,}-token prompt alone ({chunks} chunk"
              f"{'s' if chunks > 1 else ''} of <= {chunk:,}; ms, roofline)", title_justify="left")
    t.add_column("Part")
    t.add_column("ms (share)", justify="right")
    total = sum(parts.values())
    for name, sec in parts.items():
        t.add_row(name, f"{1e3 * sec:.1f} ({100 * sec / total:.0f} %)")
    t.add_row("total (per-step overhead and MTP draft prefill not included)", f"{1e3 * total:.1f}")
    return t


def step_total_ms(res: Result) -> float:
    return 1e3 * sum(res.phases.get(p, 0.0) for p in PHASES)


def summary_lines(results: Mapping[str, Result]) -> list[str]:
    """One sentence per non-baseline policy: the throughput change end to end, and the time per
    engine step it saves on the same batch (each step priced under `fresh` too)."""
    names = list(results)
    a = results[names[0]]
    out = []
    for n in names[1:]:
        b = results[n]
        thr = 100.0 * (b.get("output_throughput") / a.get("output_throughput") - 1.0)
        dlen = b.get("spec_decode_acceptance_length") - a.get("spec_decode_acceptance_length")
        line = (f"{n} vs {names[0]}: output throughput {signed(thr, 2, ' %')} (acceptance length "
                f"{signed(dlen, 4) if math.isfinite(dlen) else 'n/a: no drafts'})")
        saved = b.extra.step_saving_vs_fresh_s
        if names[0] == "fresh" and saved is not None:
            verb = "saves" if saved >= 0 else "costs"
            line += (f"; {verb} {1e6 * abs(saved):.1f} µs per engine step on the same batch "
                     f"({100 * abs(saved) / (step_total_ms(b) / 1e3):.2f} % of a "
                     f"{step_total_ms(b):.2f} ms step; each step priced under {names[0]} too, "
                     "where the phase table's Δ compares the two runs' own, different batches)")
            if len(b.get("spec_decode_per_position_acceptance_rates") or []) == 1:
                line += "; at k=1 there is no draft step after step 0, so no indexer call to skip"
        out.append(line)
    return out


def kv_lines(results: Mapping[str, Result]) -> list[str]:
    """One line per policy on the KV cache: its size, how full it got, preemptions, queueing."""
    out = []
    for name, r in results.items():
        x = r.extra
        if x.kv_cache_tokens is None:
            continue
        if x.kv_cache_peak_pct is None:
            out.append(f"KV cache ({name}): {x.kv_cache_tokens:,} tokens per engine hold every "
                       "request in flight; no preemption possible")
            continue
        out.append(f"KV cache ({name}): {x.kv_cache_tokens:,} tokens per engine, peak "
                   f"{x.kv_cache_peak_pct:.0f} % held; {x.num_preemptions:,} preemptions "
                   f"({x.preempted_requests:,} requests recomputed); queue before admission "
                   f"mean {x.mean_queue_ms:,.0f} ms, median {x.median_queue_ms:,.0f} ms")
    return out


def measured_table(results: Mapping[str, Result], measured: Mapping[str, Mapping[str, Any]],
                   fitted: tuple[str, ...] = (), fit_policy: str = "") -> Table:
    """Simulated against measured rows for each policy that has both (* = fitted)."""
    t = Table(title="Simulated vs measured (* = fitted by calibration)", title_justify="left")
    t.add_column("Metric")
    pols = [p for p in results if p in measured]
    for p in pols:
        t.add_column(f"{p}\nsim", justify="right")
        t.add_column(f"{p}\nmeasured", justify="right")
        t.add_column(f"{p}\nerror", justify="right")
    real = {p: Result(mode="vllm-bench", policy=p, metrics=dict(measured[p])) for p in pols}
    for label, key, kind in _rows(results):
        if not any(not math.isnan(_value(real[p], key)) for p in pols):
            continue
        cells = []
        for p in pols:
            s, m = _value(results[p], key), _value(real[p], key)
            star = "*" if p == fit_policy and key in fitted else ""
            err = _delta(m, s, kind)
            cells += [metric_value(s, key), metric_value(m, key) + star, err]
        t.add_row(label, *cells)
    return footnote_dashes(t, "one side does not report the metric, so there is no error")


def fit_table(before: Mapping[str, float], after: Mapping[str, float],
              measured: Mapping[str, float], simulated: Mapping[str, float]) -> Table:
    t = Table(title="Calibration fit", title_justify="left")
    t.add_column("Quantity")
    t.add_column("Before / measured", justify="right")
    t.add_column("After / simulated", justify="right")
    t.add_column("Error", justify="right")
    for n in after:
        t.add_row(n, f"{before[n]:.4g}", f"{after[n]:.4g}", "")
    for m, v in measured.items():
        t.add_row(m, f"{v:.4g}", f"{simulated[m]:.4g}", f"{100 * (simulated[m] / v - 1):+.2f} %")
    return t


_BLOCKS = " ▏▎▍▌▋▊▉█"


def bar(fraction: float, width: int = 30) -> str:
    """A horizontal bar of `width` cells for a fraction in [0, 1], eighth-cell resolution."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (_BLOCKS[part] if part else "")).ljust(width)


def acceptance_terminal(results: Mapping[str, Result], width: int = 30) -> Table:
    """Per-position acceptance (vLLM's marginal rates) per policy, as bars in a table."""
    t = Table(title="Per-position acceptance", title_justify="left", box=False, pad_edge=False)
    t.add_column("Position")
    t.add_column("Policy")
    t.add_column("Rate", justify="right")
    t.add_column("")
    npos = max((len(r.get("spec_decode_per_position_acceptance_rates") or []) for r in results.values()),
               default=0)
    for i in range(npos):
        for j, (policy, res) in enumerate(results.items()):
            rates = res.get("spec_decode_per_position_acceptance_rates") or []
            if i < len(rates):
                t.add_row(str(i) if j == 0 else "", policy, f"{100 * rates[i]:.2f}%",
                          Styled(bar(rates[i], width), style=f"color({(j % 6) + 1})"))
    return t
