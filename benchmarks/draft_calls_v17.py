"""Post hoc, seen data (docs/uncertainty.md §22): each of v14, v15, v16 refitted from its own
calibration slices alone with the fit option `draft_calls = "prompt"` (mtpsim.models.cost.DRAFT_CALLS),
its configurations re-predicted by the campaign's own path (campaign_v11.predict: `--uncertainty
128`, unpaired) and re-scored by its own score (campaign_common.score) against the shipped real
runs. The "without" arm is the shipped campaign (its fit, predictions and score.json, which the
campaign's own code re-derives byte for byte). Writes OUT/vNN/{calibration-bootstrap.json,
predictions/, score.json} and docs/data/draft-calls-v17.json (the with / without summary).

    python benchmarks/draft_calls_v17.py --out /tmp/draft-calls [--campaigns v16 v14 v15] [--workers 2]
    python benchmarks/draft_calls_v17.py --out /tmp/draft-calls --shape   # the point fits' shape only
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import importlib
import json
import math
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_common as cc  # noqa: E402
import campaign_v12 as v12  # noqa: E402

DATA = ROOT / "docs" / "data"
LEVELS = ("0.5", "0.8", "0.9", "0.95")


def staged(camp: str, out: Path) -> Path:
    """OUT/camp with the shipped calibration slices (traces un-gzipped) and the real runs linked."""
    src, dst = DATA / f"heldout-{camp}", out / camp
    for s in sorted((src / "calibrate").glob("s*")):
        d = dst / "calibrate" / s.name
        d.mkdir(parents=True, exist_ok=True)
        for f in (f for f in s.iterdir() if f.is_file()):  # the slice's pooled traces and results
            if f.name.endswith(".gz"):
                if not (d / f.name[:-3]).is_file():
                    (d / f.name[:-3]).write_bytes(gzip.decompress(f.read_bytes()))
            elif not (d / f.name).is_file():
                shutil.copy(f, d / f.name)
    for cfg in (p for p in src.iterdir() if (p / "real").is_dir()):
        (dst / cfg.name).mkdir(parents=True, exist_ok=True)
        if not (dst / cfg.name / "real").exists():
            (dst / cfg.name / "real").symlink_to((cfg / "real").resolve())
    return dst


def summary(rep: dict) -> dict:
    """Bias (median real / predicted median by metric), model-alone coverage, inside half-widths."""
    rows = [r for r in rep["rows"] if r["what"] in cc.POLICIES]
    bias = {m: statistics.median(r["real"] / r["median"] for r in rows if r["metric"] == m)
            for m in cc.METRICS}
    cov = rep["levels"]["coverage"]["model"]
    return {"median_real_over_predicted": bias,
            "coverage_model": {k: cov[str(round(float(k) * 100))] for k in LEVELS},
            "coverage_ci95": rep["levels"]["coverage_ci95"],
            "above_median_by_metric": rep["above_median_by_metric"],
            "half_widths_inside_pct": rep["half_widths_inside_pct"],
            "passed": rep["verdict"]["passed"],
            "failed": [k for k, v in rep["verdict"]["criteria"].items() if not v["ok"]]}


def _traces(paths: list[Path]) -> list:
    from mtpsim.trace import read_trace

    out = []
    for p in paths:
        tmp = Path(f"/tmp/draft-calls-v17-{abs(hash(str(p)))}.jsonl")  # read_trace reads text
        tmp.write_bytes(gzip.decompress(p.read_bytes()))
        out.append(read_trace(tmp))
        tmp.unlink()
    return out


def shape(camp: str) -> dict:
    """Point fits (shared / prompt) of the campaign's level-normalised slices: the leave-one-kind-out
    shift, and measured / priced phase seconds of the decode-only steps by batch size (1, 2-4, 5+)
    and of the prompt steps, in-sample on the slices and on the test rounds (each round's trace put
    on the fit's unit by its own level, as the score does)."""
    import numpy as np

    from mtpsim.calibration.fit import POOLED, fit_cost, measure_shift, step_quantities
    from mtpsim.calibration.normalise import normalised, unit_of
    from mtpsim.calibration.schema import read_calibration
    from mtpsim.calibration.shift import is_prefill
    from mtpsim.models.fitted import FittedCost
    from mtpsim.result import PHASES

    src = DATA / f"heldout-{camp}"
    shipped = read_calibration(src / "calibration-bootstrap.json")
    cal_tr, how = normalised(_traces(sorted((src / "calibrate").glob("s*/*.trace.jsonl.gz"))), "level")
    tests = _traces(sorted(src.glob("*/real/rounds/r*/*.trace.jsonl.gz")))
    res = {}
    for calls in ("shared", "prompt"):
        cal = dataclasses.replace(shipped, cost=fit_cost(cal_tr, shipped.cost.indexer_keys, calls))
        ws = measure_shift(cal, cal_tr)
        row = {"decode_sd": ws.decode_sd, "prefill_sd": ws.prefill_sd,
               "kinds_decode": {k: v.get("decode") for k, v in ws.kinds.items()}}
        for lab, trs, norm in (("calibration", cal_tr, False), ("tests", tests, True)):
            acc: dict[str, list[float]] = {}
            for tr in (t for t in trs if t.policy in POOLED and t.steps):
                f = how["unit_s"] / unit_of(tr, "level", tr.meta.clock or "wall") if norm else 1.0
                q, _ = step_quantities(tr)
                pr = FittedCost(cal, tr.policy, tr.num_speculative_tokens, tr.index_topk).priced(q)
                tot = sum(np.broadcast_to(pr[p], q.num_decode.shape) for p in PHASES) - cal.cost.gap_s
                meas = f * np.asarray([sum(st.phases.values()) for st in tr.steps])
                pre = is_prefill(q.prefill_tokens)
                b = np.asarray(q.num_decode)
                for key, m in (("prompt_steps", pre), ("decode", ~pre), ("decode_b1", ~pre & (b == 1)),
                               ("decode_b2_4", ~pre & (b >= 2) & (b <= 4)), ("decode_b5up", ~pre & (b >= 5))):
                    a = acc.setdefault(key, [0.0, 0.0])
                    a[0] += float(meas[m].sum())
                    a[1] += float(tot[m].sum())
            row[lab] = {k: v[0] / v[1] for k, v in acc.items() if v[1] > 0}
        res[calls] = row
    return res


def one(camp: str, out: Path) -> dict:
    mod = importlib.import_module(f"campaign_{camp}")
    if hasattr(mod, "CAMPAIGN"):
        c = dataclasses.replace(mod.CAMPAIGN, draft_calls="prompt")
    else:  # v14 predates the shared driver: its configurations, specs and own keys, on v15's shape
        import campaign_v15

        c = dataclasses.replace(campaign_v15.CAMPAIGN, name=camp, exp=mod.EXP, configs=mod.CONFIGS,
                                indexer_keys="own", draft_calls="prompt")
    where = staged(camp, out)
    cc.fit(c, where)
    cal = json.loads((where / "calibration-bootstrap.json").read_text())
    v12.predict_all(where, list(c.configs), c.exp)
    rep = cc.score(where, c.configs)
    shipped = json.loads((DATA / f"heldout-{camp}" / "score.json").read_text())
    return {"indexer_keys": c.indexer_keys, "workload_shift_with": cal["workload_shift"],
            "workload_shift_without": json.loads((DATA / f"heldout-{camp}" / "calibration-bootstrap.json")
                                                 .read_text())["workload_shift"],
            "with": summary(rep), "without": summary(shipped)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--campaigns", nargs="+", default=["v16", "v14", "v15"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write", type=Path, default=None,
                    help="default docs/data/draft-calls-v17.json (--shape: draft-calls-v17-shape.json)")
    ap.add_argument("--shape", action="store_true", help="only the point fits' residual shape (~1 min)")
    args = ap.parse_args()
    args.write = args.write or DATA / ("draft-calls-v17-shape.json" if args.shape else "draft-calls-v17.json")
    import mtpsim.runs.executor as ex

    ex.default_workers = lambda: args.workers  # campaign_v11.predict's workers
    res = {}
    if args.shape:
        res = {camp: shape(camp) for camp in args.campaigns}
        print(json.dumps(res, indent=1))
        args.write.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
        return
    for camp in args.campaigns:
        res[camp] = one(camp, args.out)
        print(camp, json.dumps({k: res[camp][k] for k in ("with", "without")}), flush=True)
        args.write.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    assert all(math.isfinite(v) for r in res.values()
               for v in r["with"]["median_real_over_predicted"].values())


if __name__ == "__main__":
    main()
