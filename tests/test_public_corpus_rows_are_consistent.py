"""The public corpus (docs/data/public) obeys its own arithmetic and its committed split rule.

A transcription slip (a digit dropped, a row's figures pasted into another) shows up as a
throughput that no longer equals tokens / duration, or as a P99 below its median.
"""
import hashlib
import math
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "docs" / "data" / "public"
ROWS = tomllib.loads((HERE / "rows.toml").read_text())
SPLIT = tomllib.loads((HERE / "split.toml").read_text())
REQUIRED = ("id", "source", "section", "engine", "engine_version", "gpu", "num_gpus", "tp", "dp", "ep",
            "k", "dataset", "input_len", "output_len", "num_prompts", "max_concurrency", "request_rate",
            "marks", "expressible", "why_not", "measured")


def _close(published: float, derived: float) -> bool:
    """Within the source's own rounding (2 decimals) or 1.5 %."""
    return abs(published - derived) <= max(0.006, 0.015 * abs(derived))


@pytest.mark.parametrize("row", ROWS["row"], ids=lambda r: r["id"])
def test_row_fields_and_arithmetic(row):
    assert all(k in row for k in REQUIRED), [k for k in REQUIRED if k not in row]
    assert row["source"] in ROWS["sources"]
    assert row["expressible"] == (row["why_not"] == "")
    m = row["measured"]
    if "duration" in m:
        d = m["duration"]
        assert _close(m["output_throughput"], m["total_output_tokens"] / d)
        if "total_token_throughput" in m:  # not every source prints it (dstack's CSV does not)
            assert _close(m["total_token_throughput"],
                          (m["total_input_tokens"] + m["total_output_tokens"]) / d)
        assert _close(m["request_throughput"], m["completed"] / d)
    for metric in ("ttft", "tpot", "itl", "e2el"):
        med, p99 = m.get(f"median_{metric}_ms"), m.get(f"p99_{metric}_ms")
        if med is not None and p99 is not None:
            assert p99 >= med
    if row["dataset"] == "random" and "total_input_tokens" in m:
        assert math.isclose(m["total_input_tokens"], row["input_len"] * m["completed"], rel_tol=0.02)


def test_ids_are_unique_and_every_row_is_split():
    ids = [r["id"] for r in ROWS["row"]]
    assert len(ids) == len(set(ids))
    assert set(SPLIT["split"]) == set(ids)


def test_split_follows_the_committed_rule():
    for row in ROWS["row"]:
        h = int(hashlib.sha256(("mtpsim-public-corpus-v1:" + row["id"]).encode()).hexdigest()[:8], 16)
        want = "train" if ("seen-before-split" in row["marks"] or h % 3 == 0) else "test"
        assert SPLIT["split"][row["id"]] == want, row["id"]
