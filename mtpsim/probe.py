"""The machine-speed probe: a fixed workload, pinned to one thread, timed before and after every
real run and every round, so a timing can be told apart from the machine it ran on.

The work never changes (probe version 1): a seeded 256 x 256 float32 matmul chain and one
sparse forward of the shipped reference model over a fixed 256-byte held-out slice, each
repeated; the figure is the median over repeats of wall and of this thread's CPU seconds.
A loaded machine stretches wall but not CPU time (the CPU clock counts only our own cycles), a
slower machine stretches both: `wall_s / cpu_s` is how much of a slow-down is other load.

A timing measured at probe figure p0 is put on the scale of a machine at p1 by multiplying
durations by p1 / p0 (throughputs by p0 / p1); `normalised()` does it.
"""

from __future__ import annotations

import functools
import statistics
import time
from datetime import UTC, datetime
from typing import Any

PROBE_VERSION = 1
REPEATS = 5
_MATMUL_N, _MATMUL_CHAIN, _SEQ = 256, 96, 256


def _work(model: Any, a: Any, b: Any, seq: Any) -> None:
    import torch

    with torch.no_grad():
        x = a
        for _ in range(_MATMUL_CHAIN):
            x = torch.tanh(x @ b)
        for _ in range(2):
            model.forward_train(seq, "sparse", 64)


@functools.lru_cache(maxsize=1)
def _inputs() -> tuple[Any, Any, Any, Any]:
    """(model, a, b, seq): loaded once per process; the probe times only the work."""
    import torch

    from mtpsim.engine import weights
    from mtpsim.engine.corpus import joined

    g = torch.Generator().manual_seed(20)
    a = torch.randn(_MATMUL_N, _MATMUL_N, generator=g)
    b = torch.randn(_MATMUL_N, _MATMUL_N, generator=g) / _MATMUL_N ** 0.5
    seq = torch.tensor([list(joined(held_out=True)[:_SEQ + 2])], dtype=torch.long)
    return weights.load(), a, b, seq


def run_probe(repeats: int = REPEATS) -> dict[str, Any]:
    """Time the fixed workload `repeats` times on one thread -> the probe record."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)  # pinned: the figure must not depend on the run's thread setting
    try:
        model, a, b, seq = _inputs()
        _work(model, a, b, seq)  # warm-up: allocator and kernels, not timed
        walls, cpus = [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.thread_time()
            _work(model, a, b, seq)
            cpus.append(time.thread_time() - c0)
            walls.append(time.perf_counter() - w0)
    finally:
        torch.set_num_threads(saved)
    return {"version": PROBE_VERSION, "threads": 1, "repeats": repeats,
            "wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
            "walls_s": walls, "cpus_s": cpus,
            "utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def figure(probes: list[dict[str, Any]] | dict[str, Any] | None, clock: str = "wall") -> float | None:
    """The probe figure (seconds) of one record or the mean of several; None without any."""
    if probes is None:
        return None
    items = [probes] if isinstance(probes, dict) else list(probes)
    vals = [float(p[f"{clock}_s"]) for p in items
            if isinstance(p, dict) and p.get("version") == PROBE_VERSION and p.get(f"{clock}_s")]
    return sum(vals) / len(vals) if vals else None


def scale(p_from: float, p_to: float) -> float:
    """Factor that puts a duration measured at probe `p_from` on the machine at probe `p_to`."""
    return p_to / p_from


def normalised(value: float, probe_s: float, *, rate: bool) -> float:
    """A timing in probe units: a duration divided by the probe, a rate (tok/s) multiplied."""
    return value * probe_s if rate else value / probe_s
