"""How far the conditioned share-vs-fresh intervals of pr47352 move with the Monte Carlo seed:
`mtpsim simulate experiments/pr47352.toml --uncertainty N --set seed=S --json` for S = 0..9
(each seed scrambles the quasi-random draws and reseeds each draw's simulation), then per N
the interval ends, their spread over seeds, the bootstrap MC SE each run printed, the effective
draws, the draws the adaptive sampler added (docs/uncertainty.md section 10) and the verdicts
(against the default region of practical equivalence).

    nice -n 19 python benchmarks/mc_seed_spread.py --draws 64 --out runs/mc-seeds
    python benchmarks/mc_seed_spread.py --summarise runs/mc-seeds --write docs/data/mc-seeds/summary.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from mtpsim.uncertainty.intervals import Interval, verdict

sys.path.insert(0, str(Path(__file__).resolve().parent))
import seed_spread  # noqa: E402  (the folder options, resumability and spread both seed benchmarks share)

METRICS = ("output_throughput", "median_tpot_ms")


def run(draws: list[int], seeds: int, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for n in draws:
        for s in range(seeds):
            f = out / f"n{n}-seed{s}.json"
            if seed_spread.done(f):
                continue
            res = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", "experiments/pr47352.toml",
                                  "--uncertainty", str(n), "--set", f"seed={s}", "--json"],
                                 capture_output=True, text=True, check=True)
            f.write_text(res.stdout)


def summarise(folder: Path) -> dict:
    by_n: dict[int, list[dict]] = {}
    for f in sorted(folder.glob("n*-seed*.json")):
        n, s = f.stem[1:].split("-seed")
        d = json.loads(f.read_text())
        deltas = d["summary"]["all measured rows"]["deltas"]["share"]
        rec = {"seed": int(s), "effective_draws": d["effective_draws"]["all measured rows"],
               "draws": d["draws_n"], "stages": d.get("sampler", {}).get("stages", [d["draws_n"]]),
               "wall_s": d["wall_s"]}
        for m in METRICS:
            iv = deltas[m]
            v = verdict(Interval(iv["median"], iv["lo"], iv["hi"], half=iv.get("region", 0.5)), "share",
                        "fresh", m)
            rec[m] = {k: iv.get(k) for k in ("median", "lo", "hi", "p_pos", "mc_se")} | {"verdict": v}
        by_n.setdefault(int(n), []).append(rec)
    out = {}
    for n, recs in sorted(by_n.items()):
        agg = {"seeds": len(recs), "runs": sorted(recs, key=lambda r: r["seed"]),
               "draws_range": [min(r["draws"] for r in recs), max(r["draws"] for r in recs)],
               "effective_draws_range": [min(r["effective_draws"] for r in recs),
                                         max(r["effective_draws"] for r in recs)]}
        for m in METRICS:
            agg.update(seed_spread.ends_over_seeds([r[m] for r in recs], f"{m}_"))
            agg[f"{m}_verdicts"] = sorted({r[m]["verdict"] for r in recs})
            agg[f"{m}_mc_se_median"] = statistics.median(r[m]["mc_se"] for r in recs)
            agg[f"{m}_mc_se_max"] = max(r[m]["mc_se"] for r in recs)
        out[str(n)] = agg
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, nargs="*", default=[64, 256])
    seed_spread.folder_options(ap, "runs/mc-seeds")
    args = ap.parse_args()
    if args.summarise is None:
        run(args.draws, args.seeds, args.out)
    summary = summarise(args.summarise or args.out)
    for n, agg in summary.items():
        for m in METRICS:
            print(f"N={n} {m}: lo range {agg[f'{m}_lo_range']}, sd {agg[f'{m}_lo_sd_over_seeds']:.2f}; "
                  f"hi range {agg[f'{m}_hi_range']}, sd {agg[f'{m}_hi_sd_over_seeds']:.2f}; median MC SE "
                  f"{agg[f'{m}_mc_se_median']:.2f} (max {agg[f'{m}_mc_se_max']:.2f}); verdicts "
                  f"{agg[f'{m}_verdicts']}; draws {agg['draws_range']}, effective "
                  f"{agg['effective_draws_range']}")
    seed_spread.write(summary, args.write)


if __name__ == "__main__":
    main()
