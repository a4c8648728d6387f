"""Re-derive the README's headline figures from the raw result files shipped in the repository.

Each figure is printed with the file(s) it comes from: first the README's answer table, then
the figures docs/validation.md states as its current state. Figures whose raw data is not
shipped (they come from long real runs) are listed with the run they came from.
`tests/test_readme_headline_figures_come_from_shipped_data.py` checks that the README and
docs/validation.md state exactly these values, and that the README's answer states no other.

Run:   python scripts/headline_figures.py
       python scripts/headline_figures.py --regenerate   # re-simulate docs/data/pr47352-sim first (seconds)
       python scripts/headline_figures.py --regenerate-uncertainty   # rerun --uncertainty 64 (~1 CPU minute)
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
UNCERTAINTY = DATA / "pr47352-uncertainty" / "summary.json"
LONG_CONTEXT = DATA / "long-context-v3" / "summary.json"
COVERAGE = DATA / "heldout-v20" / "score.json"
PUBLIC = DATA / "public" / "scores" / "host-prior-test-after-main-e1b3cc7.json"  # the latest score
KPAIR = DATA / "public" / "scores" / "trtllm-blog1-kpair-main-81677f7.json"  # the k = 0 vs k = 3 pair


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
    f, s, mf = sim["fresh"], sim["share"], real["fresh"]

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
        Figure("sharing saves per engine step", f"{1e6 * s.extra.step_saving_vs_fresh_s:.0f} µs", src),
        Figure("of a step of", f"{step_ms:.1f} ms", src),
        Figure("sharing costs in acceptance length",
               f"{s.get('spec_decode_acceptance_length') - f.get('spec_decode_acceptance_length'):.3f}", src),
    ]


def upstream_measured() -> list[Figure]:
    """The PR's own two rows: the throughput change, and the acceptance change beside the
    placebo floor (draft step 0 runs identically under both settings)."""
    from mtpsim.compare import ab_compare

    real = _results(UPSTREAM)
    rows = {r.key: r for r in ab_compare(real["fresh"], real["share"]).rows}
    src = f"{_rel(UPSTREAM)}/{{fresh,share}}.json (mtpsim compare {_rel(UPSTREAM)})"
    gain = 100 * (real["share"].get("output_throughput") / real["fresh"].get("output_throughput") - 1)
    rate = rows["spec_decode_acceptance_rate"].delta
    return [Figure("sharing, measured by the PR: output throughput", f"{_signed(gain)} %", src),
            Figure("draft step 0 acceptance moved (placebo)", f"{_signed(rows['pos0'].delta)} points", src),
            Figure("overall acceptance change", f"{_signed(rate)} point", src)]


def _signed(x: float, digits: int = 2) -> str:
    """+1.23 / −1.23, with the minus sign the README prints."""
    return f"{x:+.{digits}f}".replace("-", "−")


def _interval(d: dict, digits: int = 2) -> str:
    return f"{_signed(d['median'], digits)} % [{_signed(d['lo'], digits)}, {_signed(d['hi'], digits)}]"


def _json(path: Path) -> dict:
    import json

    return json.loads(path.read_text())


def pr47352_uncertainty() -> list[Figure]:
    """`mtpsim simulate experiments/pr47352.toml --uncertainty 64`: the share-vs-fresh output
    throughput change over the priors, and conditioned on the PR's two measured rows."""
    run = _json(UNCERTAINTY)
    src = f"{_rel(UNCERTAINTY)} (mtpsim simulate experiments/pr47352.toml --uncertainty 64 --json)"
    prior = run["summary"]["prior"]["deltas"]["share"]["output_throughput"]
    rows = run["summary"]["all measured rows"]["deltas"]["share"]["output_throughput"]
    return [Figure("sharing, over the priors: output throughput (90 %)", _interval(prior), src),
            Figure("sharing, given the PR's two rows: output throughput (90 %)", _interval(rows), src),
            Figure("P(gain > 0) given the rows", f"P(> 0) {rows['p_pos']:.2f}", src),
            Figure("effective draws given the rows",
                   f"{run['effective_draws']['all measured rows']:.0f} effective draws", src)]


def long_context() -> list[Figure]:
    """The third long-context campaign (reference engine, CPU, ~8 K prompts): `share`'s median
    TPOT change, predicted before the real runs and measured over six rounds."""
    run = _json(LONG_CONTEXT)
    at8k = next(r for r in run["results"] if r["config"] == "ctx8k")
    row = next(r for r in at8k["rows"] if r["metric"] == "median_tpot_ms")
    src = (f"{_rel(LONG_CONTEXT)} (python benchmarks/long_context_e2e.py --only ctx4k ctx8k "
           f"--rounds {run['rounds']})")
    measured = {"median": row["gain_pct"], "lo": row["ci"][0], "hi": row["ci"][1]}
    return [Figure("share at 8 K: median TPOT measured (95 % CI)", _interval(measured, 1), src),
            Figure("share at 8 K: median TPOT predicted before the run (90 %)",
                   _interval(at8k["prediction"]["gains"]["median_tpot_ms"], 1), src)]


def coverage() -> list[Figure]:
    """The pre-registered v20 campaign's score (its testable deltas, if any, counted with the levels):
    real values (timings at each run's own dense level, on the fit's unit) inside the model's own
    90 % intervals, then with each measurement's noise (the level figure's included) and the
    machine drift, and its verdict."""
    rep = _json(COVERAGE)
    allv = rep["all"]
    n = allv["n"]
    alone, noisy = allv["coverage"]["model"]["90"], allv["coverage"]["+ machine drift"]["90"]
    src = f"{_rel(COVERAGE)} (python benchmarks/campaign_v20.py --out {_rel(COVERAGE.parent)} --phase score)"
    verdict = "passed" if rep["verdict"]["passed"] else "failed"
    return [Figure("the model's intervals alone: real values inside the 90 % intervals (v20)",
                   f"{round(alone * n)} of {n} ({100 * alone:.0f} %)", src),
            Figure(f"with each measurement's noise (the level's included) and the drift; "
                   f"the campaign {verdict}",
                   f"{100 * noisy:.0f} %", src)]


def production_scale() -> list[Figure]:
    """The public corpus's held-out vLLM test rows (DeepSeek-V3.2 serving figures from public
    sources): the share of measured TTFT, TPOT and throughput inside the 90 % intervals of
    `--uncertainty 32` on priors alone, their median half-width and the median error."""
    summary = {(r["split"], r["engine"], r["metric"]): r for r in _json(PUBLIC)["summary"]
               if r.get("model", "v3.2") == "v3.2"}  # the DeepSeek-V3.2 rows
    rows = [summary[("test", "vllm", m)] for m in ("TTFT", "TPOT", "throughput")]
    src = f"{_rel(PUBLIC)} (python benchmarks/public_corpus.py --uncertainty 32 --out runs/public-corpus)"

    def each(key: str, scale: float = 1.0) -> str:
        return " / ".join(f"{scale * r[key]:.0f} %" for r in rows)

    return [Figure("vLLM test rows inside the 90 % intervals, TTFT / TPOT / throughput",
                   each("coverage", 100.0), src),
            Figure("their median half-width", each("median_half_width_pct"), src),
            Figure("the median error of the predicted median", each("median_abs_error_pct"), src)]


def mtp_on_off() -> list[Figure]:
    """The public k = 0 vs k = 3 pair (TensorRT-LLM blog 1, DeepSeek-R1 on 8 x B200, one request
    at a time): the measured per-user speed-up against mtpsim's on shared draws, and how far the
    predicted speeds sit from the measured ones."""
    rows = {r["k"]: r for r in _json(KPAIR)["rows"]}
    k3 = rows[3]
    src = f"{_rel(KPAIR)} (python benchmarks/kpair_trtllm_blog1.py --draws 32)"
    off = [100 * (r["speed"]["median"] / r["measured_speed"] - 1) for r in rows.values()]
    return [Figure("k = 3 over no MTP, per-user output speed, measured", f"{k3['measured_ratio']:.2f}x", src),
            Figure("predicted on shared draws (90 %)",
                   f"{k3['ratio']['median']:.2f}x [{k3['ratio']['lo']:.2f}, {k3['ratio']['hi']:.2f}]", src),
            Figure("every per-user speed predicted too fast by",
                   f"{min(off):.0f}-{max(off):.0f} %", src)]


def reference_cpu() -> list[Figure]:
    from mtpsim.compare import ab_compare

    res = _results(REFERENCE)
    src = f"{_rel(REFERENCE)}/*.json (mtpsim compare {_rel(REFERENCE)})"
    out = []
    for policy in ("share", "share_recent"):
        r = {x.key: x for x in ab_compare(res["fresh"], res[policy], num_boot=2000, seed=0).rows}["pos2"]
        out.append(Figure(f"{policy} vs fresh at the third draft position (95 % CI)",
                          f"{_signed(r.delta)} points, 95 % CI {_signed(r.ci_low)} to "
                          f"{_signed(r.ci_high)}".replace("+", ""), src))
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
    from mtpsim.fileio import atomic_write_text
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    exp = load_experiment(ROOT / "experiments" / "pr47352.toml")
    for policy in exp.policies:
        res = simulate(exp, policy)
        res.requests = None
        out = SIM / f"{policy}.json"
        res.write(out)
        # checkout-relative paths: the spec is named by its absolute path in this checkout
        atomic_write_text(out, out.read_text().replace(f"{ROOT}/", ""))


def regenerate_uncertainty(jobs: int = 1) -> None:
    """Rerun `--uncertainty 64` on the upstream experiment into docs/data/pr47352-uncertainty
    (without its draws, the wall time and the worker count; the draws, the 64 prior ones and the
    adaptive stages', are quasi-random and seeded, so the summary reproduces)."""
    import json

    from mtpsim.fileio import atomic_write_text, finite_json
    from mtpsim.uncertainty.run import propagate

    run = propagate(str(ROOT / "experiments" / "pr47352.toml"), [], 64, jobs).to_json()
    for key in ("draws", "wall_s", "jobs"):
        run.pop(key, None)
    run["experiment"] = "experiments/pr47352.toml"
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.saved import fingerprint

    run["spec_content_sha256"] = fingerprint(load_experiment(ROOT / "experiments" / "pr47352.toml"))
    UNCERTAINTY.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(finite_json(run), indent=1, default=float) + "\n"
    atomic_write_text(UNCERTAINTY, text.replace(f"{ROOT}/", ""))  # checkout-relative paths


def figures() -> list[tuple[str, list[Figure]]]:
    """The README's answer table, group by group."""
    return [("Upstream PR with error bars", pr47352_uncertainty()),
            ("Upstream PR, measured: acceptance change cannot be told from noise", upstream_measured()),
            ("Reference engine on a CPU", reference_cpu()),
            ("Long contexts on the reference engine", long_context()),
            ("Are the intervals honest", coverage()),
            ("Production scale: public measurements", production_scale()),
            ("MTP on vs off, a public pair", mtp_on_off())]


def validation_figures() -> list[tuple[str, list[Figure]]]:
    """The figures docs/validation.md states in its current state."""
    return [("Upstream PR, simulated", upstream_simulated()),
            ("Raw data not shipped (long real runs or timing printouts)", NOT_SHIPPED)]


def trust_figures() -> list[tuple[str, list[Figure]]]:
    """The paired-rounds, probe and Monte Carlo figures docs/uncertainty.md (sections 9-10) states."""
    import json

    from mtpsim.paired import paired_delta

    def pct(x: float) -> str:
        return f"{x:+.2f}".replace("-", "−")

    def paired(folder: Path, policy: str, claim: str) -> Figure:
        res = _results(folder)
        pd = paired_delta(res["fresh"], res[policy], "output_throughput")
        return Figure(claim, f"{pct(pd.mean)} % [{pct(pd.lo)}, {pct(pd.hi)}]",
                      f"{_rel(folder)}/*.json (mtpsim compare {_rel(folder)})")

    b2b = [paired(DATA / "reference-cpu-backtoback" / run, "share",
                  f"back-to-back run {run}: share vs fresh throughput, paired (95 %)") for run in ("a", "b")]
    full = [paired(folder, policy, f"full reference run{tag}: {policy} vs fresh throughput, paired (95 %)")
            for folder, tag in ((REFERENCE, ""), (DATA / "reference-cpu-repeat", ", repeated"))
            for policy in ("share", "share_recent", "target_share")]
    drift = json.loads((DATA / "probe-drift" / "drift.json").read_text())["summary"]
    src = f"{_rel(DATA / 'probe-drift')}/drift.json (python benchmarks/probe_drift.py --iterations 20)"
    probe = [Figure("engine wall time, raw / over the probe (relative SD)",
                    f"{100 * drift['engine_wall_rel_sd']:.1f} %, its ratio to the probe around it by "
                    f"{100 * drift['engine_over_probe_wall_rel_sd']:.1f} %", src),
             Figure("engine CPU time, raw / over the probe (relative SD)",
                    f"on the CPU clock {100 * drift['engine_cpu_rel_sd']:.1f} % and "
                    f"{100 * drift['engine_over_probe_cpu_rel_sd']:.1f} %", src)]
    mc = json.loads((DATA / "mc-seeds" / "summary.json").read_text())
    src = f"{_rel(DATA / 'mc-seeds')}/summary.json (python benchmarks/mc_seed_spread.py --draws 64 256)"
    seeds = [Figure(f"{n} draws: SD over 10 seeds of the throughput interval's ends",
                    f"{mc[n]['output_throughput_lo_sd_over_seeds']:.2f} / "
                    f"{mc[n]['output_throughput_hi_sd_over_seeds']:.2f}", src) for n in ("64", "256")]
    ada = json.loads((DATA / "mc-seeds" / "adaptive.json").read_text())["64"]
    src = (f"{_rel(DATA / 'mc-seeds')}/adaptive.json (python benchmarks/mc_seed_spread.py --draws 64 "
           "--write ...)")
    seeds += [Figure(f"adaptive, --uncertainty 64: SD over 10 seeds of the {what} interval's ends",
                     f"{ada[f'{m}_lo_sd_over_seeds']:.2f} / {ada[f'{m}_hi_sd_over_seeds']:.2f}", src)
              for m, what in (("output_throughput", "throughput"), ("median_tpot_ms", "TPOT"))]
    return [("Back-to-back paired runs", b2b), ("The shipped reference run and its repeat, paired", full),
            ("Machine-speed probe", probe),
            ("Monte Carlo spread over seeds", seeds)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--regenerate", action="store_true", help="re-simulate docs/data/pr47352-sim first")
    ap.add_argument("--regenerate-uncertainty", action="store_true",
                    help="rerun --uncertainty 64 into docs/data/pr47352-uncertainty first (a minute)")
    args = ap.parse_args()
    if args.regenerate:
        regenerate()
    if args.regenerate_uncertainty:
        regenerate_uncertainty()
    for title, figs in [*figures(), *validation_figures(), *trust_figures()]:
        print(title)
        for f in figs:
            print(f"  {f.claim}: {f.value}\n      from {f.source}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
