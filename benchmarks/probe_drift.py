"""How well the machine-speed probe tracks the reference engine's speed: a series of
(probe, engine workload, probe) triples on one machine, and the spread of the engine's time
before and after dividing it by the probe around it.

The engine workload is fixed: 2 requests of 768 held-out tokens, 32 generated tokens each,
k = 3, top-64, `fresh`, one thread, temperature 1.0 with fixed seeds (the same tokens every
time). Printed and written (`--out FILE`, JSON): per iteration the probe's wall and CPU
seconds and the engine's; the relative SD of the engine's wall time raw and as a ratio to the
probe (the residual a probe rescale leaves: the figure docs/uncertainty.md quotes as the
rescaled calibration's machine uncertainty), and the same on the CPU clock.

    python benchmarks/probe_drift.py --iterations 12 --out docs/data/probe-drift/drift.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch

from mtpsim.engine import weights
from mtpsim.engine.corpus import joined
from mtpsim.engine.engine import EngineConfig, SpecDecodeEngine
from mtpsim.fileio import atomic_write_json
from mtpsim.probe import run_probe
from mtpsim.uncertainty.domain import machine_info


def engine_workload(model) -> tuple[float, float]:
    """(wall, this thread's CPU seconds) of the fixed engine workload."""
    held = joined(held_out=True)
    engine = SpecDecodeEngine(model, EngineConfig(num_speculative_tokens=3, index_topk=64, max_num_seqs=2,
                                                  max_model_len=768 + 32, policy="fresh"))
    for i in range(2):
        engine.add_request(str(i), list(held[i * 9973:i * 9973 + 768]), 32, 1.0, True, seed=i)
    w0, c0 = time.perf_counter(), time.thread_time()
    while engine.has_unfinished():
        engine.step()
    return time.perf_counter() - w0, time.thread_time() - c0


def rel_sd(xs: list[float]) -> float:
    return statistics.stdev(xs) / statistics.mean(xs) if len(xs) > 1 else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = weights.load()
    rows = []
    for i in range(args.iterations):
        before = run_probe()
        wall, cpu = engine_workload(model)
        after = run_probe()
        probe_wall = (before["wall_s"] + after["wall_s"]) / 2
        probe_cpu = (before["cpu_s"] + after["cpu_s"]) / 2
        rows.append({"engine_wall_s": wall, "engine_cpu_s": cpu, "probe_wall_s": probe_wall,
                     "probe_cpu_s": probe_cpu, "probe_before": before, "probe_after": after,
                     "loadavg": Path("/proc/loadavg").read_text().split()[:3]})
        print(f"{i + 1:>2}: engine {wall:6.2f} s wall {cpu:5.2f} s CPU; probe {probe_wall:.3f} s wall "
              f"{probe_cpu:.3f} s CPU; load {' '.join(rows[-1]['loadavg'])}", flush=True)
    summary = {
        "iterations": len(rows), "machine": machine_info("cpu", 1),
        "engine_wall_rel_sd": rel_sd([r["engine_wall_s"] for r in rows]),
        "engine_over_probe_wall_rel_sd": rel_sd([r["engine_wall_s"] / r["probe_wall_s"] for r in rows]),
        "engine_cpu_rel_sd": rel_sd([r["engine_cpu_s"] for r in rows]),
        "engine_over_probe_cpu_rel_sd": rel_sd([r["engine_cpu_s"] / r["probe_cpu_s"] for r in rows]),
        "probe_wall_rel_sd": rel_sd([r["probe_wall_s"] for r in rows]),
    }
    for k, v in summary.items():
        if k.endswith("rel_sd"):
            print(f"{k}: {100 * v:.1f} %")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(args.out, {"summary": summary, "rows": rows, "command": "python "
                                     "benchmarks/probe_drift.py --iterations " + str(args.iterations)})


if __name__ == "__main__":
    main()
