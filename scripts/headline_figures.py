"""Re-derive the README's headline figures from the raw result files shipped in the repository.

Each figure is printed with the file(s) it comes from. Figures whose raw data is not shipped
(they come from long real runs) are listed with the run they came from.
`tests/test_readme_headline_figures_come_from_shipped_data.py` checks that the README states
exactly these values.

Run:   python scripts/headline_figures.py
       python scripts/headline_figures.py --regenerate   # re-simulate docs/data/pr47352-sim first (seconds)
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"
SIM = DATA / "pr47352-sim"
UPSTREAM = ROOT / "experiments" / "pr47352-upstream"
REFERENCE = DATA / "reference-cpu"


@dataclass(frozen=True)
class Figure:
    claim: str  # what the README says, in words
    value: str  # the figure as the README prints it
    source: str  # the shipped files it is derived from, or the run it came from


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _results(folder: Path) -> dict:
    from mtpsim.result import load_result

    return {p.stem: load_result(p) for p in sorted(folder.glob("*.json"))}


def _length(res) -> float:
    """Acceptance length from the counts (the PR's table rounds it to 2 decimals)."""
    return 1.0 + res.get("spec_decode_accepted_tokens") / res.get("spec_decode_num_drafts")


def upstream_simulated() -> list[Figure]:
    sim, real = _results(SIM), _results(UPSTREAM)
    src = f"{_rel(SIM)}/{{fresh,share}}.json vs {_rel(UPSTREAM)}/{{fresh,share}}.json"
    f, s, mf, ms = sim["fresh"], sim["share"], real["fresh"], real["share"]

    def pct(a: float, b: float) -> str:
        return f"{100 * (a / b - 1):+.1f} %"

    def pct2(a: float, b: float) -> str:
        return f"{100 * (a / b - 1):+.2f} %"

    step_ms = 1e3 * sum(s.phases.values())
    return [
        Figure("calibrated row: output throughput error", pct(f.get("output_throughput"),
                                                                mf.get("output_throughput")), src),
        Figure("calibrated row: median TPOT error",
               pct(f.get("median_tpot_ms"), mf.get("median_tpot_ms")), src),
        Figure("calibrated row: acceptance length error", f"{_length(f) - _length(mf):+.3f}", src),
        Figure("calibrated row: drafts error",
               pct2(f.get("spec_decode_num_drafts"), mf.get("spec_decode_num_drafts")), src),
        Figure("sharing, simulated: output throughput",
               pct2(s.get("output_throughput"), f.get("output_throughput")), src),
        Figure("sharing saves per engine step", f"{1e6 * s.extra['step_saving_vs_fresh_s']:.0f} µs", src),
        Figure("of a step of", f"{step_ms:.1f} ms", src),
        Figure("sharing costs in acceptance length",
               f"{s.get('spec_decode_acceptance_length') - f.get('spec_decode_acceptance_length'):.3f}", src),
        Figure("sharing, measured by the PR: output throughput",
               pct2(ms.get("output_throughput"), mf.get("output_throughput")),
               f"{_rel(UPSTREAM)}/{{fresh,share}}.json"),
    ]


def upstream_noise() -> list[Figure]:
    from mtpsim.compare import ab_compare

    real = _results(UPSTREAM)
    rows = {r.key: r for r in ab_compare(real["fresh"], real["share"]).rows}
    src = f"{_rel(UPSTREAM)}/{{fresh,share}}.json (mtpsim compare {_rel(UPSTREAM)})"
    rate = rows["spec_decode_acceptance_rate"].delta
    return [Figure("draft step 0 acceptance moved (placebo)", f"{rows['pos0'].delta:.2f} points", src),
            Figure("overall acceptance change", f"{rate:.2f} point", src)]


def reference_cpu() -> list[Figure]:
    from mtpsim.compare import ab_compare

    res = _results(REFERENCE)
    src = f"{_rel(REFERENCE)}/*.json (mtpsim compare {_rel(REFERENCE)})"
    out = []
    for policy in ("share", "share_recent"):
        r = {x.key: x for x in ab_compare(res["fresh"], res[policy], num_boot=2000, seed=0).rows}["pos2"]
        out.append(Figure(f"{policy} vs fresh at the third draft position (95 % CI)",
                          f"{r.delta:.2f} points, 95 % CI {r.ci_low:.2f} to {r.ci_high:.2f}", src))
    return out


NOT_SHIPPED = [
    Figure("draft-phase speed-up of share at 1K / 4K context", "1.10x / 1.24x",
           "python benchmarks/bench_reference.py (timings printed, not stored; reruns in minutes)"),
    Figure("draft-phase speed-up of share at 1K / 4K / 8K, faithful skip (one loaded run)",
           "1.12x / 1.28x / 1.37x",
           "python benchmarks/bench_reference.py --contexts 1024 4096 8156 --batch 4 --repeats 20 "
           "--out-len 32 --before --clock cpu (printed, not stored; docs/reference-engine.md)"),
    Figure("held-out sim vs real: acceptance length / output throughput / median TPOT within",
           "2.6 % / 8.7 % / 9.6 %",
           "python benchmarks/heldout_validation.py --out runs/heldout-v6 (real runs on the reference "
           "engine, about 16 minutes on an idle 2-core machine; runs/ is not shipped, the fit is: "
           "experiments/heldout/calibration.json)"),
]


def regenerate() -> None:
    """Re-simulate the upstream experiment (seed 0) into docs/data/pr47352-sim, without the
    per-request records (the figures are aggregates; the simulation is seeded, so it reproduces)."""
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    exp = load_experiment(ROOT / "experiments" / "pr47352.toml")
    for policy in exp.policies:
        res = simulate(exp, policy)
        res.requests = None
        res.write(SIM / f"{policy}.json")


def figures() -> list[tuple[str, list[Figure]]]:
    return [("Upstream PR, simulated", upstream_simulated()),
            ("Upstream acceptance change: cannot tell", upstream_noise()),
            ("Reference engine on a CPU", reference_cpu()),
            ("Raw data not shipped (long real runs or timing printouts)", NOT_SHIPPED)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regenerate", action="store_true", help="re-simulate docs/data/pr47352-sim first")
    if ap.parse_args().regenerate:
        regenerate()
    for title, figs in figures():
        print(title)
        for f in figs:
            print(f"  {f.claim}: {f.value}\n      from {f.source}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
