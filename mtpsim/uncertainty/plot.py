"""The advise figure: share vs fresh throughput gain against context, a band per k."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def gain_plot(adv: Any, prob: float, path: Path) -> Path:
    from mtpsim.plots import _pyplot, _save
    from mtpsim.uncertainty.summary import interval

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ctxs = list(adv.dep.contexts)
    for k in (k for k in adv.ks() if k > 0):  # k = 0 drafts nothing: nothing to share
        ivs = [interval(adv.share_vs_fresh(k, c), None, prob) for c in ctxs]
        med = np.array([iv.median for iv in ivs])
        (line,) = ax.plot(ctxs, med, marker="o", label=f"k={k}")
        ax.fill_between(ctxs, [iv.lo for iv in ivs], [iv.hi for iv in ivs], alpha=0.12,
                        color=line.get_color())
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ctxs, [f"{c:,}" for c in ctxs])
    ax.set_xlabel("prompt length (tokens)")
    ax.set_ylabel("share vs fresh output throughput (%)")
    ax.set_title(f"share vs fresh: median and {round(100 * prob)} % band over {adv.dep.draws} draws")
    ax.legend(fontsize=8)
    return _save(fig, path)
