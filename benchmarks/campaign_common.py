"""The shared driver of the held-out coverage campaigns from v15 on (docs/uncertainty.md, "The v15
campaign"): v14's design (benchmarks/campaign_v14.py, which stays as its tag registered it),
parameterised by a small `Campaign` description (configurations, calibration kinds, seeds, clock
limits), so that a campaign's own file holds only what it registers.

What it does, as v14 did:
 1. run, interleaved: for i = 0..11, calibration slice i (kind `kinds[i % 4]`, seed slice_seed + i,
    both policies over the kind's rounds, fresh first on even i), then `configs[i]`; every `run-real`
    with `--level-every LEVEL_EVERY` (the dense in-engine level).
 2. fit: every finished slice's traces, `normalise="level"` (mtpsim.runs.simulate.fit, in-process,
    32 bootstrap refits, the leave-one-kind-out workload shift), `indexer_keys` as the campaign
    registers it (v14: "own") -> OUT/calibration-bootstrap.json.
 3. predict: v13's (campaign_v11.predict: `--uncertainty 128`, unpaired, or paired where the
    campaign registers `paired_predictions` (v18), from the fit and the specs alone); SHA-256 of
    each in OUT/predictions/manifest.json and campaign.log before the score reads any test result
    (campaign_v12.predict_all).
 4. score: v14's: a run's timings put on the fit's unit by its own dense level, the level's error
    in its measurement SE; deltas v10's (campaign_v10.scored_deltas); v11's judge -> OUT/score.json.
 5. penalty: v11's paired per-position log score of each penalty form against zero penalty, on
    the `share` traces of the configurations `penalty_configs` names ("all": every configuration
    that ran, pooled; "inside": v11-v14's rule), each event scored at its own trace's k, one request
    bootstrap over the pooled requests; v11's decision rule -> OUT/penalty.json.
Clock rule: nothing starts later than run_minutes after the campaign's first start (OUT/started.json)
or after last_start_utc, whichever is first; a run still going hard_minutes after the first start
or at hard_stop_utc is stopped and its configuration (or slice) and every later one reported as not
run; the fit, predictions, score and penalty follow on what finished.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(1, str(ROOT))  # in-process fit and predictions: this checkout's mtpsim, as run-real

import campaign_v11 as v11  # noqa: E402  (v11's prediction, judging, penalty rule)
import campaign_v12 as v12  # noqa: E402  (v12's hashes, log, autogroup)
from campaign_v10 import BOOTSTRAP, DRIFT_CPU, METRICS, POLICIES, _al_se, scored_deltas  # noqa: E402
from campaign_v10 import mtpsim as _run_mtpsim  # noqa: E402

LEVEL_EVERY = 8
LEVEL_SE_FALLBACK = 0.03  # log SD of a run's dense level when its readings cannot give one
DRY = v12.DRY  # --dry: 4 requests of 8 tokens per run, 2 rounds at most


def mtpsim(args: list[str], deadline: float) -> bool:
    """`python -m mtpsim ARGS` until done or the deadline (a module global: tests replace it)."""
    return _run_mtpsim(args, deadline)


@dataclass(frozen=True)
class Campaign:
    """What a campaign registers; the rest is this module's (v14's) procedure."""

    name: str  # "v15": the default output folder runs/NAME and the log's words
    exp: Path  # the folder of the configurations' and kinds' experiment files
    configs: tuple[str, ...]  # the registered order: slice i runs right before configs[i]
    kinds: tuple[str, ...]  # calibration kinds (experiment file stems); slice i is kinds[i % len]
    slice_seed: int  # slice i runs at seed slice_seed + i
    run_minutes: float  # no start later than this after the first start ...
    hard_minutes: float  # ... and a run still going this long after it is stopped
    last_start_utc: datetime  # ... nor after these UTC times
    hard_stop_utc: datetime
    penalty_configs: str = "all"  # "all" (pooled over every configuration) or "inside"
    draft_calls: str = "shared"  # the fit's draft-call pricing (mtpsim.models.cost.DRAFT_CALLS)
    indexer_keys: str = "own"  # the fit's step-cost option (mtpsim.runs.simulate.fit): v14's "own"
    paired_predictions: bool = False  # v18: both policies of a draw on one seed (v11-v17: unpaired)

    def kind_of(self, i: int) -> str:
        return self.kinds[i % len(self.kinds)]


def clock(c: Campaign, out: Path) -> tuple[float, float]:
    """(last start, hard stop) of the clock rule, from the first start recorded once in OUT."""
    path = out / "started.json"
    if not path.is_file():
        path.write_text(json.dumps({"started_unix": time.time(),
                                    "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
    t0 = float(json.loads(path.read_text())["started_unix"])
    return (min(t0 + 60 * c.run_minutes, c.last_start_utc.timestamp()),
            min(t0 + 60 * c.hard_minutes, c.hard_stop_utc.timestamp()))


def run_slice(c: Campaign, out: Path, i: int, dry: bool, hard: float) -> bool:
    from mtpsim.spec import load_experiment

    where = out / "calibrate" / f"s{i:02d}"
    if all((where / f"{p}.json").is_file() for p in POLICIES):
        return True
    spec = c.exp / f"{c.kind_of(i)}.toml"
    rounds = load_experiment(str(spec)).workload.rounds
    order = POLICIES if i % 2 == 0 else POLICIES[::-1]
    rounds = min(rounds, 2) if dry else rounds
    return mtpsim(["run-real", str(spec), "--out", str(where), "--rounds", str(rounds),
                   "--seed", str(c.slice_seed + i), *[a for p in order for a in ("-p", p)],
                   "--level-every", str(LEVEL_EVERY), *(DRY if dry else [])], hard)


def run_config(c: Campaign, out: Path, name: str, dry: bool, hard: float) -> bool:
    from mtpsim.spec import load_experiment

    real = out / name / "real"
    if all((real / f"{p}.json").is_file() for p in POLICIES):
        return True
    rounds = load_experiment(str(c.exp / f"{name}.toml")).workload.rounds
    return mtpsim(["run-real", str(c.exp / f"{name}.toml"), "--out", str(real), "--rounds",
                   str(min(rounds, 2) if dry else rounds), "--level-every", str(LEVEL_EVERY),
                   *(DRY if dry else [])], hard)


def slice_traces(out: Path) -> list[Path]:
    return [s / f"{p}.trace.jsonl" for s in sorted((out / "calibrate").glob("s*")) for p in POLICIES
            if all((s / f"{q}.json").is_file() for q in POLICIES)]


def fit(c: Campaign, out: Path) -> bool:
    """The level-normalised calibration of every finished slice (kinds: the slices' experiment files),
    the step cost counting the indexer's keys as `c.indexer_keys` says."""
    cal = out / "calibration-bootstrap.json"
    if cal.is_file():
        return True
    traces = slice_traces(out)
    if not traces:
        return False
    from mtpsim.runs.simulate import fit as fit_traces

    more = {"draft_calls": c.draft_calls} if c.draft_calls != "shared" else {}  # v15/v16: the call they made
    fit_traces(traces, BOOTSTRAP, cal, normalise="level", indexer_keys=c.indexer_keys, **more)
    return True


def level_of(res) -> tuple[float | None, float]:
    """A run's dense level (CPU seconds, the record's weighted trimmed mean) and its log SE: the log
    SD of every level reading over sqrt(their number), LEVEL_SE_FALLBACK with fewer than two."""
    from mtpsim.level import figure, readings_of

    rec = res.extra.level
    xs = [float(x) for r in readings_of(rec) for x in r.get("cpus_s") or [] if x > 0]
    se = statistics.stdev(map(math.log, xs)) / math.sqrt(len(xs)) if len(xs) > 1 else LEVEL_SE_FALLBACK
    return figure(rec, "cpu"), se


def level_values(name: str, pred: dict, res: dict, unit: float) -> list:
    """The policies' levels: acceptance length as v13; timings put on the fit's unit by the run's level."""
    from mtpsim.level import scaled
    from mtpsim.uncertainty.scoring import Scored

    values = []
    for p in POLICIES:
        rounds = res[p].extra.rounds or []
        L, lse = level_of(res[p])
        for m in METRICS:
            q = {float(k): v for k, v in pred["levels"][p][m].items()}
            real = float(res[p].get(m))
            if m == "spec_decode_acceptance_length":
                values.append(Scored(name, p, m, real, q, _al_se(res[p]), 0.0, pred["inside"]))
                continue
            if not L:
                raise SystemExit(f"{name}/{p}: no level probe figure (run-real --level-every)")
            f = scaled(1.0, L, unit, rate="throughput" in m)  # the unit's scale over the measured one
            xs = [r["metrics"][m] for r in rounds if m in r.get("metrics", {})]
            se = f * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
            se = math.hypot(se, lse * real * f)
            values.append(Scored(name, p, m, real * f, q, se, DRIFT_CPU * q[0.5], pred["inside"],
                                 extra={"level_scale": f, "level_cpu_s": L, "level_log_se": lse,
                                        "raw": real}))
    return values


def scored_values(out: Path, configs: tuple[str, ...]) -> list:
    """v14's scored values: levels on the fit's unit by each run's dense level; v10's deltas."""
    from mtpsim.calibration.schema import read_calibration
    from mtpsim.result import load_result

    cal = read_calibration(out / "calibration-bootstrap.json")
    unit = float(cal.machine["normalised"]["unit_s"])
    values = []
    for name in configs:
        pred_path, real = out / "predictions" / f"{name}.json", out / name / "real"
        if not pred_path.is_file() or not all((real / f"{p}.json").is_file() for p in POLICIES):
            continue
        pred = json.loads(pred_path.read_text())
        res = {p: load_result(real / f"{p}.json") for p in POLICIES}
        values += level_values(name, pred, res, unit)
        values += scored_deltas(name, pred, res)
    return values


def score(out: Path, configs: tuple[str, ...]) -> dict:
    """v14's score (v12's report, v11's judge, above-median by metric) -> OUT/score.json."""
    from mtpsim.fileio import atomic_write_json
    from mtpsim.uncertainty.scoring import report

    ran = tuple(n for n in configs if (out / "predictions" / f"{n}.json").is_file())
    values = scored_values(out, ran)
    rep = report(values)
    rep["configs_scored"] = sorted({v.config for v in values})
    rep["configs_not_run"] = [n for n in configs if n not in rep["configs_scored"]]
    rep["verdict"] = v11.judge(rep, values)
    rep["above_median_by_metric"] = {
        m: statistics.fmean(v.real > v.median for v in vs) if vs else None
        for m in METRICS for vs in [[v for v in values if not v.delta and v.metric == m]]}
    rep["half_widths_inside_pct"] = v11.half_widths(values)
    rep["rows"] = [{"config": v.config, "what": v.what, "metric": v.metric, "real": v.real,
                    "median": v.median, "q05": v.quantiles[0.05], "q95": v.quantiles[0.95],
                    "measurement_se": v.measurement_se, "drift_sd": v.drift_sd, "inside": v.inside,
                    "testable": v.testable, **{k: v.extra[k] for k in sorted(v.extra)}} for v in values]
    atomic_write_json(out / "score.json", rep)
    return rep


def penalty_events(cal, traces: list, form_names: tuple[str, ...]) -> tuple:
    """Every `share` acceptance event of `traces` (seeded repeats once), its log-score difference
    form - zero penalty for each form, each event priced at its own trace's k and top-k; request
    ids distinct across traces. -> (request id per event, {form: differences})."""
    import numpy as np
    from penalty_log_score import log_scores
    from penalty_model import distinct, predicted_rates

    from mtpsim.calibration.fit import acceptance_events

    reqs, diffs = [], {f: [] for f in form_names}
    offset = 0
    by_k: dict[int, list] = {}
    for tr in distinct(list(traces)):
        by_k.setdefault(int(tr.num_speculative_tokens), []).append(tr)
    for k in sorted(by_k):
        d = acceptance_events(by_k[k]).arrays(["share"])
        if not d["y"].size:
            continue
        base = log_scores(d["y"], predicted_rates(cal, "kappa", "fresh", d["ctx"], d["pos"], k, d["topk"]))
        for f in form_names:
            diffs[f].append(log_scores(d["y"], predicted_rates(cal, f, "share", d["ctx"], d["pos"], k,
                                                               d["topk"])) - base)
        reqs.append(d["req"] + offset)
        offset += int(d["req"].max()) + 1
    cat = np.concatenate
    events = {f: cat(v) if v else np.array([]) for f, v in diffs.items()}
    return (cat(reqs) if reqs else np.array([], int)), events


def compare_pooled(cal, traces: list, boot: int = v11.PENALTY_BOOT, seed: int = 0) -> dict:
    """v11's comparison (benchmarks/penalty_log_score.compare: the mean difference per event over
    all positions, a request-bootstrap 95 % CI, the same resample for every form) on traces of
    several k pooled."""
    import numpy as np
    from penalty_model import FORMS

    req, diffs = penalty_events(cal, traces, tuple(FORMS))
    reqs = np.unique(req)
    picks = np.random.default_rng(seed).integers(0, len(reqs), (boot, len(reqs)))
    idx = np.searchsorted(reqs, req)
    out: dict = {"events": int(req.size), "requests": int(len(reqs)), "forms": {}}
    for form in FORMS:
        s = np.bincount(idx, weights=diffs[form], minlength=len(reqs))
        n = np.bincount(idx, minlength=len(reqs)).astype(float)
        means = s[picks].sum(1) / np.maximum(n[picks].sum(1), 1)
        out["forms"][form] = {"all": {"mean": float(s.sum() / n.sum()), "events": int(n.sum()),
                                      "ci95": np.percentile(means, [2.5, 97.5]).tolist()}}
    return out


def penalty(c: Campaign, out: Path) -> dict | None:
    """The registered penalty comparison on the `share` traces of `c.penalty_configs`, v11's rule."""
    from mtpsim.calibration.schema import read_calibration
    from mtpsim.fileio import atomic_write_json
    from mtpsim.trace import read_trace

    names = [n for n in c.configs if c.penalty_configs == "all" or n.startswith("in-")]
    paths = [p for p in (out / n / "real" / "share.trace.jsonl" for n in names) if p.is_file()]
    if not paths:
        return None
    res = compare_pooled(read_calibration(out / "calibration-bootstrap.json"), [read_trace(p) for p in paths])
    res["traces"] = [str(p.relative_to(out)) for p in paths]
    res["pooled"] = c.penalty_configs
    res["verdict"] = v11.penalty_verdict(res)
    atomic_write_json(out / "penalty.json", res)
    return res


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run_all(c: Campaign, out: Path, dry: bool) -> list[str]:
    """Phase 1 under the clock rule: the configurations whose runs finished (with their slices)."""
    last, hard = clock(c, out)
    if dry:
        last = hard = time.time() + 3 * 3600  # the plumbing only: no clock
    ran: list[str] = []
    for i, name in enumerate(c.configs):
        if time.time() > last:
            v12._log(out, f"clock rule: slice {i} and {name} and later not started")
            break
        if not run_slice(c, out, i, dry, hard):
            v12._log(out, f"clock rule: slice {i} ({c.kind_of(i)}) stopped unfinished; "
                          f"{name} and later not run")
            break
        v12._log(out, f"calibration slice {i} ({c.kind_of(i)}) done; load {_load()}")
        if time.time() > last:
            v12._log(out, f"clock rule: {name} and later not started")
            break
        if not run_config(c, out, name, dry, hard):
            v12._log(out, f"clock rule: {name} stopped unfinished; not run")
            break
        v12._log(out, f"{name} done; load {_load()}")
        ran.append(name)
    return ran


def run_phases(c: Campaign, out: Path, phase: str, dry: bool) -> dict:
    """Every phase (or the score and penalty alone), resumable; the score's report."""
    out.mkdir(parents=True, exist_ok=True)
    if dry:
        v11.DRAWS = 8  # v11.predict's draws (module global): the plumbing only
    if phase == "all":
        # a dry run shares the machine with other work: only the campaign raises its priority
        v12._log(out, "start (dry: priority unchanged)" if dry else f"start; {v12._quiet()}; load {_load()}")
        ran = run_all(c, out, dry)
        if not fit(c, out):
            v12._log(out, "fit failed: no finished slice")
            return {}
        cal = json.loads((out / "calibration-bootstrap.json").read_text())
        v12._log(out, f"normalised: unit_s {cal['machine']['normalised']['unit_s']}; "
                      f"workload shift: {json.dumps(cal.get('workload_shift'))}")
        v12.predict_all(out, ran, c.exp, c.paired_predictions)
    rep = score(out, c.configs)
    print(json.dumps({k: v for k, v in rep.items() if k != "rows"}, indent=1))
    pen = penalty(c, out)
    if pen is not None:
        print(json.dumps({"penalty": pen["verdict"], "events": pen["events"]}, indent=1))
    return rep


def main(c: Campaign, doc: str) -> None:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / c.name)
    ap.add_argument("--phase", choices=("all", "score"), default="all")
    ap.add_argument("--dry", action="store_true", help="4 requests of 8 tokens per run: the plumbing only")
    args = ap.parse_args()
    run_phases(c, args.out, args.phase, args.dry)
