"""Reading the `vllm:spec_decode_*` counters from a Prometheus `/metrics` page, summed over
engines the way `vllm bench serve` does."""

from __future__ import annotations

from mtpsim.metrics import SpecDecodeCounters

_COUNTERS = {"vllm:spec_decode_num_drafts_total": "num_drafts",
             "vllm:spec_decode_num_draft_tokens_total": "num_draft_tokens",
             "vllm:spec_decode_num_accepted_tokens_total": "num_accepted_tokens"}
_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"


def parse_spec_decode(text: str) -> SpecDecodeCounters | None:
    """The four spec-decode counters, or None when the page has none (no speculation). The
    text format is parsed by prometheus_client (the library vLLM exposes it with): label
    escaping, exemplars and `_created` samples are its business, not a regular expression's."""
    from prometheus_client.parser import text_string_to_metric_families

    c = SpecDecodeCounters()
    per_pos: dict[int, int] = {}
    found = False
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name, value = sample.name, int(sample.value)
            if name in _COUNTERS:
                setattr(c, _COUNTERS[name], getattr(c, _COUNTERS[name]) + value)
            elif name == _PER_POS and str(sample.labels.get("position", "")).isdigit():
                pos = int(sample.labels["position"])
                per_pos[pos] = per_pos.get(pos, 0) + value
            else:
                continue
            found = True
    if not found:
        return None
    c.accepted_per_pos = [per_pos.get(i, 0) for i in range(max(per_pos, default=-1) + 1)]
    return c


def render_spec_decode(c: SpecDecodeCounters, labels: dict[str, str]) -> str:
    """The same counters as vLLM 0.33.0 exposes them, written by prometheus_client's own
    exposition (HELP/TYPE lines, `_total` samples, label escaping)."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import CounterMetricFamily

    names, values = list(labels), list(labels.values())
    families = []
    for name, doc, value in (
            ("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", c.num_drafts),
            ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", c.num_draft_tokens),
            ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
             c.num_accepted_tokens)):
        f = CounterMetricFamily(name, doc, labels=names)
        f.add_metric(values, float(value))
        families.append(f)
    f = CounterMetricFamily("vllm:spec_decode_num_accepted_tokens_per_pos",
                            "Accepted tokens per draft position.", labels=[*names, "position"])
    for i, v in enumerate(c.accepted_per_pos):
        f.add_metric([*values, str(i)], float(v))
    families.append(f)

    class _Fixed:
        def collect(self):
            return families

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed())
    return generate_latest(registry).decode()
