"""Every figure: PNG files drawn with matplotlib (imported lazily), and which figures each
command writes with `--plot DIR` (the terminal's acceptance bars are a table: report/tables.py).

Each drawing function takes plain data (results, rows, points) and writes one figure; none reads
files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtpsim.fileio import atomic_write_bytes
from mtpsim.result import Result


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend, imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: str | Path) -> Path:
    """Write `fig` as a PNG atomically and close it."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    pyplot().close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


def plot_acceptance(results: Mapping[str, Result], path: str | Path) -> Path:
    """Grouped bars: per-position acceptance rate per policy."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    n = max(1, len(results))
    for j, (policy, res) in enumerate(results.items()):
        rates = res.get("spec_decode_per_position_acceptance_rates") or []
        xs = [i + (j - (n - 1) / 2) * 0.8 / n for i in range(len(rates))]
        ax.bar(xs, [100 * r for r in rates], width=0.8 / n, label=policy)
    ax.set_xlabel("draft position")
    ax.set_ylabel("acceptance (%, vLLM marginal)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    return save_png(fig, path)


def plot_overlap(points: Sequence[tuple[int, int, float]], path: str | Path) -> Path:
    """Overlap of the reused vs the fresh top-k against context length, one series per draft step.

    `points` are (draft_step, context_len, overlap_fraction)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for step in sorted({p[0] for p in points}):
        pts = sorted((c, o) for s, c, o in points if s == step)
        ax.scatter([c for c, _ in pts], [o for _, o in pts], s=6, alpha=0.4, label=f"draft step {step}")
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("top-k overlap (reused vs fresh)")
    ax.set_ylim(0, 1.02)
    ax.legend()
    ax.grid(alpha=0.3)
    return save_png(fig, path)


def plot_sweep(rows: Sequence[Mapping[str, Any]], x: str, ys: Sequence[str], path: str | Path,
               series: str = "policy") -> Path:
    """Metrics `ys` against swept parameter `x`, one line per value of `series` (e.g. policy)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(ys), figsize=(5 * len(ys), 3.5), squeeze=False)
    for ax, y in zip(axes[0], ys, strict=True):
        for name in sorted({str(r[series]) for r in rows}):
            pts = sorted((r[x], r[y]) for r in rows if str(r[series]) == name and y in r)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.grid(alpha=0.3)
        ax.legend()
    return save_png(fig, path)


def plot_sim_vs_real(points: Sequence[tuple[str, float, float]], path: str | Path) -> Path:
    """Scatter of (label, real, sim) on log-log axes with the y = x line; each point annotated."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    vals = [v for _, r, s in points for v in (r, s) if v > 0]
    lo, hi = (min(vals) * 0.8, max(vals) * 1.25) if vals else (0.1, 10)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--")
    for label, real, sim in points:
        ax.scatter([real], [sim], s=18)
        ax.annotate(label, (real, sim), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("real")
    ax.set_ylabel("simulated")
    ax.grid(alpha=0.3, which="both")
    return save_png(fig, path)


def gain_plot(adv: Any, prob: float, path: Path) -> Path:
    """advise: share vs fresh throughput gain against context, median and band per k."""
    import numpy as np


    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ctxs = list(adv.dep.contexts)
    for k in (k for k in adv.ks() if k > 0):  # k = 0 drafts nothing: nothing to share
        ivs = [adv.interval(adv.share_vs_fresh(k, c), prob) for c in ctxs]
        med = np.array([iv.median for iv in ivs])
        (line,) = ax.plot(ctxs, med, marker="o", label=f"k={k}")
        ax.fill_between(ctxs, [iv.lo for iv in ivs], [iv.hi for iv in ivs], alpha=0.12,
                        color=line.get_color())
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ctxs, [f"{c:,}" for c in ctxs])
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("share vs fresh output throughput (%)")
    ax.set_title(f"share vs fresh: median and {round(100 * prob)} % band over {adv.n_draws:,} draws")
    ax.legend(fontsize=8)
    return save_png(fig, path)


SWEEP_METRICS = ("output_throughput", "median_tpot_ms")


def file_stem(name: str) -> str:
    """`name` as one file name inside the --plot folder: only letters, digits, `_` and `-`
    (names come from validated inputs; this is the second line of defence against `../x`)."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:80]
    return stem or "unnamed"


def simulate_plots(results: Mapping[str, Result], out: Path,
                   traces: Sequence[Path] = ()) -> list[Path]:
    """Per-position acceptance per policy; with traces, overlap vs context per draft step."""
    paths = [plot_acceptance(results, out / "acceptance.png")]
    if traces:
        from mtpsim.calibration.traces import overlap_points

        for policy, pts in overlap_points(traces).items():
            if pts:
                paths.append(plot_overlap(pts, out / f"overlap-{file_stem(policy)}.png"))
    return paths


def compare_plots(pairs: Mapping[str, tuple[Result, Result]],
                  by_mode: Mapping[str, Mapping[str, Result]], out: Path) -> list[Path]:
    """Sim-vs-real scatter over every policy's metrics, and per-position acceptance per mode."""
    from mtpsim.compare import fidelity

    paths = []
    points = [(f"{policy}:{r.key}", r.real, r.sim) for policy, (real, sim) in pairs.items()
              for r in fidelity(real, sim) if r.real > 0 and r.sim > 0]
    if points:
        paths.append(plot_sim_vs_real(points, out / "sim-vs-real.png"))
    for mode, results in by_mode.items():
        if results:
            paths.append(plot_acceptance(results, out / f"acceptance-{mode}.png"))
    return paths


def sweep_plots(rows: Sequence[Mapping[str, Any]], axes: Sequence[str], out: Path) -> list[Path]:
    """Throughput and TPOT against each swept field, one line per policy (other fields at their
    first value, so every line is a clean one-factor cut of the grid)."""
    paths = []
    for axis in axes:
        others = [a for a in axes if a != axis]
        first = {a: rows[0][a] for a in others} if rows else {}
        cut = [r for r in rows if all(r[a] == v for a, v in first.items())]
        if len({r[axis] for r in cut}) < 2:
            continue
        name = file_stem(axis.replace(".", "_"))
        paths.append(plot_sweep(cut, axis, list(SWEEP_METRICS), out / f"sweep-{name}.png"))
    return paths
