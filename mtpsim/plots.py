"""Plots as PNG files (matplotlib, imported lazily) and compact terminal renderings (rich).

Each function takes plain data (results, rows, points) and writes one figure; none reads files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mtpsim.fileio import atomic_write_bytes
from mtpsim.plainprint import Styled, Table
from mtpsim.result import Result

_BLOCKS = " ▏▎▍▌▋▊▉█"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> Path:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return Path(path)


def bar(fraction: float, width: int = 30) -> str:
    """A horizontal bar of `width` cells for a fraction in [0, 1], eighth-cell resolution."""
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (_BLOCKS[part] if part else "")).ljust(width)


def acceptance_terminal(results: Mapping[str, Result], width: int = 30) -> Table:
    """Per-position acceptance (vLLM's marginal rates) per policy, as bars in a table."""
    t = Table(title="Per-position acceptance", title_justify="left", box=False, pad_edge=False)
    t.add_column("Position")
    t.add_column("Policy")
    t.add_column("Rate", justify="right")
    t.add_column("")
    npos = max((len(r.get("spec_decode_per_position_acceptance_rates") or []) for r in results.values()),
               default=0)
    for i in range(npos):
        for j, (policy, res) in enumerate(results.items()):
            rates = res.get("spec_decode_per_position_acceptance_rates") or []
            if i < len(rates):
                t.add_row(str(i) if j == 0 else "", policy, f"{100 * rates[i]:.2f}%",
                          Styled(bar(rates[i], width), style=f"color({(j % 6) + 1})"))
    return t


def plot_acceptance(results: Mapping[str, Result], path: str | Path) -> Path:
    """Grouped bars: per-position acceptance rate per policy."""
    plt = _pyplot()
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
    return _save(fig, path)


def plot_overlap(points: Sequence[tuple[int, int, float]], path: str | Path) -> Path:
    """Overlap of the reused vs the fresh top-k against context length, one series per draft step.

    `points` are (draft_step, context_len, overlap_fraction)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for step in sorted({p[0] for p in points}):
        pts = sorted((c, o) for s, c, o in points if s == step)
        ax.scatter([c for c, _ in pts], [o for _, o in pts], s=6, alpha=0.4, label=f"draft step {step}")
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("top-k overlap (reused vs fresh)")
    ax.set_ylim(0, 1.02)
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_sweep(rows: Sequence[Mapping[str, Any]], x: str, ys: Sequence[str], path: str | Path,
               series: str = "policy") -> Path:
    """Metrics `ys` against swept parameter `x`, one line per value of `series` (e.g. policy)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(ys), figsize=(5 * len(ys), 3.5), squeeze=False)
    for ax, y in zip(axes[0], ys, strict=True):
        for name in sorted({str(r[series]) for r in rows}):
            pts = sorted((r[x], r[y]) for r in rows if str(r[series]) == name and y in r)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.grid(alpha=0.3)
        ax.legend()
    return _save(fig, path)


def plot_sim_vs_real(points: Sequence[tuple[str, float, float]], path: str | Path) -> Path:
    """Scatter of (label, real, sim) on log-log axes with the y = x line; each point annotated."""
    plt = _pyplot()
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
    return _save(fig, path)
