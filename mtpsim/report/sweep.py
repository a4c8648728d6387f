"""The rich table of `mtpsim sweep`: one row per grid point and policy."""

from __future__ import annotations

import json
import math
from typing import Any

from rich import box
from rich.table import Table

from mtpsim.report.numbers import number, signed

_COLUMNS = (("output_throughput", "out tok/s", ",.0f"), ("median_tpot_ms", "TPOT ms", ".2f"),
            ("median_ttft_ms", "TTFT ms", ",.0f"), ("spec_decode_acceptance_length", "acc len", ".3f"),
            ("request_throughput", "req/s", ".3f"))


# Short axis headers, so a grid fits the terminal; the caption spells out the ones used.
_SHORT = {"num_speculative_tokens": "k", "max_concurrency": "conc", "num_prompts": "prompts",
          "input_len": "in", "output_len": "out", "index_topk": "top-k", "request_rate": "rate",
          "max_num_seqs": "seqs", "max_num_batched_tokens": "tokens"}


def sweep_table(rows: list[dict[str, Any]], keys: list[str], title: str) -> Table:
    """One row per grid point and policy; Δ tok/s against the point's first policy."""
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              caption_justify="left")
    short = [_SHORT.get(k.split(".")[-1], k.split(".")[-1]) for k in keys]
    legend = [f"{s} = {k}" for s, k in zip(short, keys, strict=True) if s != k.split(".")[-1]]
    t.caption = "; ".join(legend) or None
    for s in short:
        t.add_column(s, justify="right")
    t.add_column("policy")
    for _, label, _ in _COLUMNS:
        t.add_column(label, justify="right")
    t.add_column("Δ tok/s", justify="right")
    base: dict[tuple, float] = {}
    for r in rows:
        point = tuple(json.dumps(r[k], sort_keys=True) for k in keys)  # a value may be a list
        tput = r.get("output_throughput", math.nan)
        if point not in base:
            base[point], delta = tput, ""
        else:
            delta = signed(100 * (tput / base[point] - 1), 2, "%")
        t.add_row(*[str(r[k]) for k in keys], r["policy"],
                  *[number(r.get(m), f) for m, _, f in _COLUMNS], delta)
    return t
