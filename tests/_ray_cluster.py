"""A multi-node Ray cluster on 127.0.0.1 for tests (ray.cluster_utils.Cluster), and the tiny
real-mode experiment the cluster sweeps run (random-init reference weights, a few tokens)."""

from __future__ import annotations

import os
from pathlib import Path

# Read when ray is imported: keep every Ray address on loopback (never the interface address).
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
HEAD = {**NODE, "include_dashboard": False}

TINY = """
description = "tiny real sweep"
seed = 3
policies = ["fresh", "share"]
[speculative]
num_speculative_tokens = 2
index_topk = 8
[acceptance]
per_position = [0.8, 0.6]
[workload]
num_prompts = 2
input_len = 16
output_len = 8
max_concurrency = 2
temperature = 1.0
[reference]
weights = "{weights}"
device = "cpu"
threads = 1
"""


def start_cluster(workers: int = 1):
    """Head plus `workers` worker nodes, one CPU each, all on 127.0.0.1."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args=HEAD)
    for _ in range(workers):
        cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    return cluster


def write_tiny(folder: Path) -> Path:
    from _reference_models import tiny_spec

    return tiny_spec(folder, TINY, "tiny.toml")


def proc_cmdlines() -> dict[int, str]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                if stat[stat.rindex(")") + 2] == "Z":
                    continue
                out[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError):
                pass
    return out
