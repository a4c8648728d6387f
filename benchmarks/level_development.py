"""Development for v14 (docs/uncertainty.md §16): does the in-engine level probe (mtpsim.engine.level)
pin the step cost's level per run, where the one-thread machine probe (mtpsim.probe) did only in
part (§15)?

Runs (phase `run`, a timing job): SLICES calibration slices of the v13 kinds (experiments/heldout/
v13/calibrate-*.toml, unchanged), slice i of kind i mod 4, seed SEED + i (fresh data: v13 used
131-142), both policies over the kind's rounds (fresh first on even slices), both probes on ->
OUT/sNN. Every burst kind runs the same batch shapes in each of its slices.

Analysis (phase `analyse`, point fits of the traces, so its figures do not depend on the machine):
for each normalisation (none; the machine probe's CPU figure; the level probe's CPU figure), the
traces are put on their median figure (mtpsim.calibration.normalise) and
 - within-kind slice-level SD: the fit on all traces prices every run's decode-only steps
   (measured / priced, in-sample); a slice's level is the mean log over its two policies; per kind
   the SD of its slices' levels; pooled as the root mean of the kinds' variances;
 - leave-one-kind-out decode SD: the fit's own workload-shift measurement (fit.measure_shift);
 - correlation (logs) of the runs' raw levels with each probe's figure;
the fresh-vs-share SD within a slice (back to back, the same step cost), and the level probe's
overhead (its share of the runs' wall time). The rule it is judged by is
committed in §16 before the runs.

§17's dense attempt: `--level-every N` runs every slice with the level probe read densely (one
timed step every N engine steps, the run's level their trimmed mean weighted by engine time,
mtpsim.engine.level.Sampling.dense), `--seed` its own seeds; the analysis then also reports, not
judged, the same runs' level by other averages of the same readings (BESIDE: the median and the
unweighted trimmed mean of every reading, and the median of the start and end readings alone, as
§16's instants), and how the dense readings spread inside a run.

    python benchmarks/level_development.py --out runs/level-dev --phase run
    python benchmarks/level_development.py --out runs/level-dev --phase analyse \
        --json docs/data/level-development/analysis.json
    python benchmarks/level_development.py --out runs/level-dense --seed 181 --level-every 8 --phase run
    python benchmarks/level_development.py --out runs/level-dense --phase analyse \
        --json docs/data/level-development-dense/analysis.json
"""

from __future__ import annotations

import argparse
import gzip
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXP = ROOT / "experiments" / "heldout" / "v13"
KINDS = ("calibrate-stream", "calibrate-burst-ctx600-conc4", "calibrate-burst-ctx1200-conc8",
         "calibrate-burst-ctx1700-conc2")
POLICIES = ("fresh", "share")
SLICES, SEED = 12, 161
VARIANTS = (None, "probe", "level")
# reported beside the judged variants when the runs read densely: (name, average, readings kept)
BESIDE = (("level-median", "median", None), ("level-trimmed", "trimmed", None),
          ("level-ends", "median", ("start", "end")))


def run(out: Path, slices: int, seed: int = SEED, level_every: int = 0) -> None:
    """The slices, one `mtpsim run-real` each (resumable: a finished slice is kept);
    `level_every` > 0: the level probe read densely."""
    from mtpsim.spec import load_experiment

    log = out / "runs.log"
    for i in range(slices):
        where, kind = out / f"s{i:02d}", KINDS[i % len(KINDS)]
        if all((where / f"{p}.json").is_file() for p in POLICIES):
            continue
        spec = EXP / f"{kind}.toml"
        order = POLICIES if i % 2 == 0 else POLICIES[::-1]
        argv = [sys.executable, "-m", "mtpsim", "run-real", str(spec), "--out", str(where),
                "--rounds", str(load_experiment(str(spec)).workload.rounds), "--seed", str(seed + i),
                *[a for p in order for a in ("-p", p)],
                *(["--level-every", str(level_every)] if level_every else [])]
        t0 = time.time()
        ok = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL).returncode == 0
        with log.open("a") as f:
            f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} slice {i} ({kind}) "
                    f"{'done' if ok else 'FAILED'} in {time.time() - t0:.0f} s; load "
                    f"{open('/proc/loadavg').read().split()[:3]}\n")
        if not ok:
            raise SystemExit(f"slice {i} failed")


def read_trace_any(path: Path):
    from mtpsim.trace import read_trace

    if path.suffix != ".gz":
        return read_trace(path)
    with tempfile.NamedTemporaryFile("wb", suffix=".trace.jsonl") as t:
        t.write(gzip.open(path).read())
        t.flush()
        return read_trace(t.name)


def slice_traces(out: Path) -> tuple[list[str], list]:
    """(slice names, traces in slice x policy order) of every finished slice."""
    names, traces = [], []
    for s in sorted(out.glob("s[0-9][0-9]")):
        paths = [next(iter(sorted(s.glob(f"{p}.trace.jsonl*"))), None) for p in POLICIES]
        if all(paths):
            names.append(s.name)
            traces += [read_trace_any(p) for p in paths]  # type: ignore[arg-type]
    return names, traces


def decode_ratio(cal, tr) -> float:
    """Measured over priced phase seconds of a trace's decode-only steps (§15's run level)."""
    from mtpsim.calibration.fit import step_quantities
    from mtpsim.calibration.shift import is_prefill
    from mtpsim.models.fitted import FittedCost
    from mtpsim.result import PHASES

    q, _ = step_quantities(tr)
    pr = FittedCost(cal, tr.policy, tr.num_speculative_tokens, tr.index_topk).priced(q)
    priced = np.broadcast_to(sum(pr[p] for p in PHASES) - cal.cost.gap_s, (len(tr.steps),))
    dec = ~is_prefill(q.prefill_tokens)
    meas = np.asarray([sum(st.phases.values()) for st in tr.steps], float)
    return float(meas[dec].sum() / priced[dec].sum())


def with_level(traces: list, average: str, where: tuple[str, ...] | None) -> list:
    """Copies of the traces whose level record is re-derived from the same readings by `average`,
    keeping only the readings taken `where` (None: all)."""
    from mtpsim.level import readings_of, record

    out = []
    for tr in traces:
        lv = tr.meta.level
        kept = [r for r in readings_of(lv) if where is None or r.get("where") in where]
        out.append(_with_meta_level(tr, {**record(kept, 0.0, average=average), "derived_from": "readings"}
                                    if lv else lv))
    return out


def _with_meta_level(tr, lv):
    import dataclasses

    return dataclasses.replace(tr, meta=tr.meta.copy(level=lv))


def variant(traces: list, names: list[str], by: str | None) -> dict:
    """One normalisation's figures: slice levels, within-kind SD, leave-one-kind-out SD. `by`: None,
    "probe", "level" (the records' own figure) or a BESIDE name (the same readings re-averaged)."""
    from mtpsim.calibration.fit import fit_traces
    from mtpsim.calibration.normalise import normalised
    from mtpsim.calibration.shift import trace_kind

    beside = {name: (avg, where) for name, avg, where in BESIDE}
    if by in beside:
        traces, by = with_level(traces, *beside[by]), "level"
    used, how = (traces, None) if by is None else normalised(traces, by)
    cal = fit_traces(used)
    runs = [math.log(decode_ratio(cal, tr)) for tr in used]
    n = len(POLICIES)
    levels = {s: statistics.fmean(runs[n * i:n * i + n]) for i, s in enumerate(names)}
    by_kind: dict[str, list[float]] = {}
    for i, s in enumerate(names):
        by_kind.setdefault(trace_kind(used[n * i]), []).append(levels[s])
    sds = {k: statistics.stdev(v) for k, v in by_kind.items() if len(v) > 1}
    pooled = math.sqrt(statistics.fmean(v * v for v in sds.values())) if sds else None
    ws = cal.workload_shift
    pairs = [runs[n * i:n * i + n] for i in range(len(names))]  # fresh and share, back to back
    policy_sd = math.sqrt(statistics.fmean((a - b) ** 2 for a, b in pairs) / 2)
    return {"normalised": how, "run_log_levels": runs, "slice_log_levels": levels,
            "within_slice_policy_sd": policy_sd,
            "within_kind_sd": sds,
            "within_kind_sd_pooled": pooled,
            "loko_decode_sd": ws.decode_sd, "loko_prefill_sd": ws.prefill_sd, "loko_source": ws.source,
            "loko_kinds": {k: v.get("decode") for k, v in ws.kinds.items()}}


def analyse(out: Path) -> dict:
    from mtpsim.calibration.normalise import clock_of, unit_of

    names, traces = slice_traces(out)
    rows = {str(by): variant(traces, names, by) for by in VARIANTS}
    clock = clock_of(traces)
    raw = rows["None"]["run_log_levels"]
    corr = {}
    for by in ("probe", "level"):
        units = [math.log(unit_of(tr, by, clock)) for tr in traces]
        corr[by] = float(np.corrcoef(raw, units)[0, 1])
    over = [tr.meta.level.get("overhead_wall_s") for tr in traces]
    run_s = [tr.meta.level.get("run_wall_s") for tr in traces]
    rep = {"slices": names, "clock": clock, "variants": rows, "log_corr_with_raw_level": corr,
           "level_overhead_share": sum(over) / sum(run_s) if all(run_s) else None,
           "note": "development, fresh data; point fits of the traces; one series"}
    if all(tr.meta.level.get("average") == "weighted" for tr in traces):  # §17's dense runs
        rep["beside"] = dense_beside(traces, names, raw, clock)
    return rep


def dense_beside(traces: list, names: list[str], raw: list[float], clock: str) -> dict:
    """§17, reported beside (not judged): the same readings averaged otherwise (BESIDE), each
    figure's log correlation with the runs' raw level and the least-squares slope of the raw
    level's log on the figure's, how the dense readings spread inside a run and between a round's
    start and end, and the overhead split between dense readings and the ends."""
    from mtpsim.calibration.normalise import unit_of
    from mtpsim.level import readings_of

    rows = {name: variant(traces, names, name) for name, _, _ in BESIDE}
    figs = {"level": traces, **{n: with_level(traces, a, w) for n, a, w in BESIDE}}
    corr, slope = {}, {}
    for name, trs in figs.items():
        units = [math.log(unit_of(tr, "level", clock)) for tr in trs]
        corr[name] = float(np.corrcoef(raw, units)[0, 1])
        slope[name] = float(np.polyfit(units, raw, 1)[0])
    within, ends, n_dense, cost = [], [], [], {"dense": 0.0, "ends": 0.0}
    for tr in traces:
        rs = readings_of(tr.meta.level)
        dense = [math.log(r[f"{clock}s_s"][0]) for r in rs if str(r.get("where", "")).startswith("step")]
        n_dense.append(len(dense))
        if len(dense) > 1:
            within.append(statistics.stdev(dense))
        start = None
        for r in rs:
            cost["dense" if str(r.get("where", "")).startswith("step") else "ends"] += float(r["cost_wall_s"])
            if r.get("where") == "start":
                start = statistics.median(r[f"{clock}s_s"])
            elif r.get("where") == "end" and start:
                ends.append(math.log(statistics.median(r[f"{clock}s_s"]) / start))
    run_s = sum(float(tr.meta.level.get("run_wall_s") or 0.0) for tr in traces)
    return {"variants": rows, "log_corr_with_raw_level": corr, "slope_raw_on_figure": slope,
            "dense_readings_per_run": n_dense,
            "within_run_dense_log_sd_median": statistics.median(within) if within else None,
            "start_end_log_diff_rms": math.sqrt(statistics.fmean(x * x for x in ends)) if ends else None,
            "overhead_share_dense": cost["dense"] / run_s if run_s else None,
            "overhead_share_ends": cost["ends"] / run_s if run_s else None,
            "every_steps": sorted({tr.meta.level.get("every_steps") for tr in traces})}


def ship(out: Path, dest: Path) -> None:
    """Each slice's pooled results and gzipped traces, and the run log, into `dest` (paths in the
    checkout made relative)."""
    for s in sorted(out.glob("s[0-9][0-9]")):
        (dest / s.name).mkdir(parents=True, exist_ok=True)
        for p in POLICIES:
            # the spec's source is the absolute path run-real was given: shipped relative
            text = (s / f"{p}.json").read_text().replace(f'"{ROOT}/', '"')
            (dest / s.name / f"{p}.json").write_text(text)
            gz = dest / s.name / f"{p}.trace.jsonl.gz"
            with open(s / f"{p}.trace.jsonl", "rb") as f, gzip.open(gz, "wb") as g:
                g.write(f.read())
    shutil.copy(out / "runs.log", dest / "runs.log")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--phase", choices=("run", "analyse", "ship"), default="analyse")
    ap.add_argument("--slices", type=int, default=SLICES)
    ap.add_argument("--seed", type=int, default=SEED, help="slice i runs seed SEED + i")
    ap.add_argument("--level-every", type=int, default=0,
                    help="run-real --level-every (0: §16's sparse readings)")
    ap.add_argument("--json", type=Path, default=None, help="where the analysis is written")
    ap.add_argument("--dest", type=Path, default=ROOT / "docs" / "data" / "level-development")
    args = ap.parse_args()
    if args.phase == "run":
        args.out.mkdir(parents=True, exist_ok=True)
        run(args.out, args.slices, args.seed, args.level_every)
    elif args.phase == "ship":
        ship(args.out, args.dest)
    else:
        rep = analyse(args.out)
        for by, r in rep["variants"].items():
            kinds = {k.removeprefix("calibrate-"): round(v, 3) for k, v in r["within_kind_sd"].items()}
            print(f"{by:6s} within-kind slice SD {r['within_kind_sd_pooled']:.3f} {kinds} leave-one-kind-out "
                  f"decode SD {r['loko_decode_sd']:.3f} prefill {r['loko_prefill_sd']:.3f}; fresh vs share "
                  f"{r['within_slice_policy_sd']:.3f}")
        print("log correlation with the raw run level:", rep["log_corr_with_raw_level"],
              "level overhead share:", rep["level_overhead_share"])
        if "beside" in rep:
            b = rep["beside"]
            for by, r in b["variants"].items():
                print(f"{by:13s} within-kind slice SD {r['within_kind_sd_pooled']:.3f} leave-one-kind-out "
                      f"decode SD {r['loko_decode_sd']:.3f} (beside, not judged)")
            print({k: v for k, v in b.items() if k != "variants"})
        if args.json:
            from mtpsim.fileio import atomic_write_json

            args.json.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(args.json, rep)


if __name__ == "__main__":
    main()
