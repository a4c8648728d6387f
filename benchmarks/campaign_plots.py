"""Campaign plots: every model size's overlap-vs-L/K curves per draft step in one PNG, and the
per-position acceptance difference of each policy from `fresh` (request-level 95% CIs).

    python benchmarks/campaign_plots.py docs/campaign/small docs/campaign/base --out docs/campaign

Reads DIR/overlap.json and DIR/acceptance.json (from campaign_overlap.py / campaign_acceptance.py)
where present; writes OUT/overlap.png and OUT/acceptance.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mtpsim.report.plots import pyplot, save_png


def _label(d: Path, args: dict[str, Any]) -> str:
    return f"{args['weights']} ({args['params'] / 1e6:.1f} M)" if "params" in args else d.name


def plot_overlap(runs: list[tuple[str, list[dict[str, Any]]]], path: Path) -> Path:
    plt = pyplot()
    steps = sorted({r["step"] for _, s in runs for r in s})
    fig, axes = plt.subplots(1, len(steps), figsize=(6 * len(steps), 4.5), sharey=True, squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = "os^Dvx*"
    for ax, step in zip(axes[0], steps, strict=True):
        for ci, (label, summary) in enumerate(runs):
            contexts = sorted({r["context"] for r in summary})
            for mi, L in enumerate(contexts):
                rows = sorted((r for r in summary if r["step"] == step and r["context"] == L),
                              key=lambda r: r["ratio"])
                x = [r["ratio"] for r in rows]
                ax.errorbar(x, [r["overlap"] for r in rows],
                            yerr=[[r["overlap"] - r["overlap_lo"] for r in rows],
                                  [r["overlap_hi"] - r["overlap"] for r in rows]],
                            color=colors[ci % len(colors)], marker=markers[mi % len(markers)],
                            ms=4, lw=1, capsize=2, alpha=0.85, label=f"{label}, L={L}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("L / K (context / top-k)")
        ax.set_title(f"draft step {step}: reused step-0 row vs fresh row")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("top-k overlap (mean over windows, 95% CI)")
    axes[0][-1].legend(fontsize=6, ncol=2)
    return save_png(fig, path)


def plot_acceptance(runs: list[tuple[str, list[dict[str, Any]]]], path: Path) -> Path:
    plt = pyplot()
    panels = sorted({(lab, r["context"], r["temperature"]) for lab, s in runs for r in s})
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 4), sharey=True, squeeze=False)
    for ax, (lab, ctx, temp) in zip(axes[0], panels, strict=True):
        summary = next(s for label, s in runs if label == lab)
        rows = [r for r in summary if r["context"] == ctx and r["temperature"] == temp
                and r["policy"] != "fresh"]
        for j, r in enumerate(rows):
            pos = [p["pos"] + 0.15 * (j - len(rows) / 2) for p in r["positions"]]
            ax.errorbar(pos, [p["diff"] for p in r["positions"]],
                        yerr=[[p["diff"] - p["diff_lo"] for p in r["positions"]],
                              [p["diff_hi"] - p["diff"] for p in r["positions"]]],
                        fmt="o", capsize=3, label=r["policy"])
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(f"{lab}, L={ctx}, T={temp:g}", fontsize=9)
        ax.set_xlabel("draft position")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("acceptance minus fresh (pp, 95% CI)")
    axes[0][-1].legend(fontsize=7)
    return save_png(fig, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", type=Path, nargs="+", help="one campaign folder per model size")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    for name, plot in (("overlap", plot_overlap), ("acceptance", plot_acceptance)):
        runs = []
        for d in a.dirs:
            f = d / f"{name}.json"
            if f.exists():
                store = json.loads(f.read_text())
                runs.append((_label(d, store["args"]), store["summary"]))
        if runs:
            print(plot(runs, a.out / f"{name}.png"))


if __name__ == "__main__":
    main()
