"""Development, post hoc on SEEN campaigns (docs/uncertainty.md §31): does the in-engine level probe
read the machine as the out-of-engine probe does, whatever the policy and the prompt length?

Every campaign run from v14 on reads two machine figures: the dense in-engine level (mtpsim.level:
a fixed decode step timed between the engine's steps, every 8 steps; its CPU figure, a weighted
trimmed mean) and, around each policy's half of every round, the out-of-engine probe (mtpsim.probe:
5 pinned repeats right before and right after; their CPU figure). v18's one delta miss
(out-k4-ctx2100-conc3) came with the level reading `fresh` 1.23x slower than `share`. This script
prints, per run, the level over the mean of its rounds' probes, its dependence on the prompt length
(Spearman) and the fresh / share ratio of that figure per configuration; and, per round of the
configurations named with --rounds-of, both probes' fresh / share ratios beside the TPOT ratio.

    python benchmarks/level_vs_probe.py --campaigns v15 v16 v17 v18 \
        [--rounds-of v18/out-k4-ctx2100-conc3] [--write docs/data/level-vs-probe.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))

from shipped_campaign import round_probe  # noqa: E402

POLICIES = ("fresh", "share")


def runs(campaign: str) -> list[dict]:
    from mtpsim.level import figure
    from mtpsim.spec import load_experiment

    out = []
    for real in sorted((ROOT / "docs" / "data" / f"heldout-{campaign}").glob("*/real")):
        cfg = real.parent.name
        exp = load_experiment(str(ROOT / "experiments" / "heldout" / campaign / f"{cfg}.toml"))
        for p in POLICIES:
            if not (real / f"{p}.json").is_file():
                continue
            extra = json.loads((real / f"{p}.json").read_text())["extra"]
            probes = [x for x in map(round_probe, extra.get("rounds") or []) if x]
            level = figure(extra.get("level"), "cpu")
            if level and probes:
                out.append({"campaign": campaign, "config": cfg, "policy": p,
                            "prompt": exp.workload.input_len, "k": exp.k,
                            "level_over_probe": level / statistics.fmean(probes)})
    return out


def per_round(campaign: str, cfg: str) -> list[dict]:
    from mtpsim.level import figure

    real = ROOT / "docs" / "data" / f"heldout-{campaign}" / cfg / "real"
    rounds = {p: json.loads((real / f"{p}.json").read_text())["extra"]["rounds"] for p in POLICIES}
    return [{"round": i, "probe_fresh_over_share": round_probe(f) / round_probe(s),
             "level_fresh_over_share": figure(f["level"], "cpu") / figure(s["level"], "cpu"),
             "tpot_fresh_over_share": f["metrics"]["median_tpot_ms"] / s["metrics"]["median_tpot_ms"]}
            for i, (f, s) in enumerate(zip(rounds["fresh"], rounds["share"], strict=True))]


def main() -> None:
    from scipy.stats import spearmanr

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaigns", nargs="+", default=["v15", "v16", "v17", "v18"])
    ap.add_argument("--rounds-of", nargs="*", default=["v18/out-k4-ctx2100-conc3"])
    ap.add_argument("--write", type=Path)
    a = ap.parse_args()
    rows = [r for c in a.campaigns for r in runs(c)]
    summary = {}
    for p in POLICIES:
        xs = [r for r in rows if r["policy"] == p]
        rho, pv = spearmanr([r["prompt"] for r in xs], [r["level_over_probe"] for r in xs])
        summary[p] = {"runs": len(xs), "median": statistics.median(r["level_over_probe"] for r in xs),
                      "spearman_prompt": float(rho), "p": float(pv)}
        print(f"{p}: {len(xs)} runs, level / probe median {summary[p]['median']:.4f}, "
              f"Spearman with the prompt length {rho:+.2f} (p {pv:.2f})")
    by: dict = {}
    for r in rows:
        by.setdefault((r["campaign"], r["config"]), {})[r["policy"]] = r
    pairs = [{"campaign": c, "config": n, "prompt": v["fresh"]["prompt"],
              "fresh_over_share": v["fresh"]["level_over_probe"] / v["share"]["level_over_probe"]}
             for (c, n), v in sorted(by.items()) if len(v) == 2]
    rho, pv = spearmanr([x["prompt"] for x in pairs], [x["fresh_over_share"] for x in pairs])
    ratios = sorted(x["fresh_over_share"] for x in pairs)
    print(f"fresh / share of level / probe over {len(pairs)} configurations: median "
          f"{statistics.median(ratios):.4f}, range {ratios[0]:.3f}-{ratios[-1]:.3f}, Spearman with the "
          f"prompt length {rho:+.2f} (p {pv:.2f})")
    rounds = {}
    for item in a.rounds_of:
        c, n = item.split("/", 1)
        rounds[item] = per_round(c, n)
        for r in rounds[item]:
            print(f"{item} round {r['round']}: fresh / share: probe {r['probe_fresh_over_share']:.3f}, "
                  f"level {r['level_fresh_over_share']:.3f}, median TPOT {r['tpot_fresh_over_share']:.3f}")
    if a.write:
        from mtpsim.fileio import atomic_write_json

        atomic_write_json(a.write, {"command": "python benchmarks/level_vs_probe.py --campaigns "
                                    + " ".join(a.campaigns) + " --rounds-of " + " ".join(a.rounds_of),
                                    "by_policy": summary, "pairs": pairs, "rounds": rounds, "runs": rows})


if __name__ == "__main__":
    main()
