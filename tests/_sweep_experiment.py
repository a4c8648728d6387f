"""A small, fast experiment for sweep tests (simulated in a few milliseconds)."""

from pathlib import Path

SMALL = """
description = "small sweep"
seed = 2
policies = ["fresh", "share"]
[engine]
tp = 8
max_num_seqs = 16
[workload]
num_prompts = 10
input_len = 2000
output_len = 60
max_concurrency = 4
"""


def write_small(tmp_path: Path) -> Path:
    p = tmp_path / "small.toml"
    p.write_text(SMALL)
    return p
