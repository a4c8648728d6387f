"""A 1,000-point simulation sweep on a local Ray cluster (127.0.0.1) against the local process
pool with as many workers as the cluster has CPUs, and the wall time it projects on N nodes.

Grid: k = 1..5 x max_concurrency 1..10 x seed 1..20 of a small experiment (10 requests per
policy, a few milliseconds per point), so that Ray's per-task costs show. Ray overhead is
(Ray wall - pool wall) / Ray wall, both timing submit-to-last-file-written (the cluster's start
and the engine probe that `mtpsim sweep` runs first are reported apart). Per-point cost is the
pool's wall x its workers / points (CPU-seconds); the projection is points x cost / (N x CPUs
per node). On a loaded machine the figures are noisy: quote them as such.
Run: python benchmarks/bench_sweep_ray.py [--nodes 2] [--cpus-per-node 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before ray is imported: stay on loopback

SMALL = """
description = "bench: small sweep point"
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
GRID = ["speculative.num_speculative_tokens=1,2,3,4,5", "workload.max_concurrency=" +
        ",".join(str(c) for c in range(1, 11)), "seed=" + ",".join(str(s) for s in range(1, 21))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2, help="Ray nodes on 127.0.0.1, one CPU each")
    ap.add_argument("--cpus-per-node", type=int, default=32, help="for the projection")
    args = ap.parse_args()
    import ray
    from ray.cluster_utils import Cluster

    from mtpsim import sweep
    from mtpsim.cluster.connect import connect, require_engine
    from mtpsim.runs.executor import Pool

    with tempfile.TemporaryDirectory() as tmp:
        exp = Path(tmp) / "small.toml"
        exp.write_text(SMALL)
        axes, points = sweep.build_points(str(exp), GRID)
        assert len(points) == 1000
        t0 = time.perf_counter()
        local = list(sweep.run_points(str(exp), points, Path(tmp) / "pool", args.nodes))
        pool = time.perf_counter() - t0

        t0 = time.perf_counter()
        node = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
        cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
        for _ in range(args.nodes - 1):
            cluster.add_node(**node)
        cluster.wait_for_nodes()
        try:
            start = time.perf_counter() - t0
            t0 = time.perf_counter()
            nodes = connect(cluster.address)
            require_engine(nodes, "simulate")
            probe = time.perf_counter() - t0
            t0 = time.perf_counter()
            remote = list(sweep.run_points(str(exp), points, Path(tmp) / "ray", Pool(nodes=tuple(nodes))))
            on_ray = time.perf_counter() - t0
        finally:
            ray.shutdown()
            cluster.shutdown()
    assert len(remote) == len(local) == 1000
    same = {r["point_id"]: r["results"] for r in local} == {r["point_id"]: r["results"] for r in remote}
    overhead = (on_ray - pool) / on_ray
    cost = pool * args.nodes / len(points)
    print(f"1000 points: process pool ({args.nodes} workers) {pool:.1f} s; Ray ({args.nodes} nodes "
          f"x 1 CPU) {on_ray:.1f} s -> Ray overhead {100 * overhead:+.1f} % of its wall time "
          f"(target <= 20 %); results identical: {same}")
    print(f"not timed above: cluster start {start:.1f} s, connect + engine probe {probe:.1f} s")
    print(f"per-point cost {1000 * cost:.1f} ms CPU; projected wall for 1000 points at "
          f"{args.cpus_per_node} CPUs per node:")
    for n in (1, 4, 16, 64):
        print(f"  {n:>3} nodes: {len(points) * cost / (n * args.cpus_per_node):.2f} s (+ probe)")


if __name__ == "__main__":
    main()
