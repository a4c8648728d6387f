"""Reading the `vllm:spec_decode_*` counters from a Prometheus `/metrics` page, summed over
engines the way `vllm bench serve` does."""

from __future__ import annotations

import re

from mtpsim.metrics import SpecDecodeCounters

_LINE = re.compile(r'^(vllm:spec_decode_[a-z_]+_total)(\{[^}]*\})?\s+(\S+)')
_POSITION = re.compile(r'position="(\d+)"')


def parse_spec_decode(text: str) -> SpecDecodeCounters | None:
    """The four spec-decode counters, or None when the page has none (no speculation)."""
    c = SpecDecodeCounters()
    per_pos: dict[int, int] = {}
    found = False
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m is None:
            continue
        name, labels, value = m.group(1), m.group(2) or "", int(float(m.group(3)))
        found = True
        if name == "vllm:spec_decode_num_drafts_total":
            c.num_drafts += value
        elif name == "vllm:spec_decode_num_draft_tokens_total":
            c.num_draft_tokens += value
        elif name == "vllm:spec_decode_num_accepted_tokens_total":
            c.num_accepted_tokens += value
        elif name == "vllm:spec_decode_num_accepted_tokens_per_pos_total":
            if (pm := _POSITION.search(labels)) is not None:
                pos = int(pm.group(1))
                per_pos[pos] = per_pos.get(pos, 0) + value
    if not found:
        return None
    c.accepted_per_pos = [per_pos.get(i, 0) for i in range(max(per_pos, default=-1) + 1)]
    return c


def render_spec_decode(c: SpecDecodeCounters, labels: dict[str, str]) -> str:
    """The same counters as vLLM 0.33.0 exposes them (HELP/TYPE lines, `_total` samples)."""
    lab = ",".join(f'{k}="{v}"' for k, v in labels.items())
    out = []
    for name, doc, value in (
            ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", c.num_drafts),
            ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", c.num_draft_tokens),
            ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
             c.num_accepted_tokens)):
        out += [f"# HELP {name}_total {doc}", f"# TYPE {name}_total counter",
                f"{name}_total{{{lab}}} {float(value)}"]
    name = "vllm:spec_decode_num_accepted_tokens_per_pos"
    out += [f"# HELP {name}_total Accepted tokens per draft position.",
            f"# TYPE {name}_total counter"]
    out += [f'{name}_total{{{lab},position="{i}"}} {float(v)}'
            for i, v in enumerate(c.accepted_per_pos)]
    return "\n".join(out) + "\n"
