"""Power of the v15 campaign's share - fresh deltas, computed before the campaign (issue #20 item 7:
a delta is testable when its measurement SE is at most half the predicted effect).

Measured, from shipped data only (docs/data/heldout-v11 .. -v14, real runs of this VM):
 - timing deltas (median TPOT, output throughput) are the mean of the paired per-round differences
   (campaign_v10.scored_deltas), so their SE is SD_round / sqrt(rounds). SD_round, the SD of one
   round's share - fresh difference in %, is read per configuration; it does not fall with the
   requests in a round or the length of a block (the step time itself moves between the two
   blocks of a round), so the median over configurations is used for every shape, the upper
   quartile beside it;
 - acceptance-length deltas are the difference of two request-bootstrap SEs, so their SE is
   sigma_k sqrt(2 / n) for n requests a policy; sigma_k (one request's SD, 96 output tokens) per k;
 - the wall time of a run: a least-squares fit of each run's wall (its level record's run_wall_s)
   on its CPU duration and its rounds (v14's 48 runs), plus the start of each `run-real` (v14's log
   intervals minus the run walls); the slices' minutes are v14's.
Predicted, with v14's calibration (docs/data/heldout-v14/calibration-bootstrap.json) and the
registered prediction method (campaign_v11.predict: --uncertainty, unpaired): each v15
configuration's median effect and its duration (requests x output tokens / predicted throughput).
The v15 campaign predicts from its own calibration, so its effects will differ somewhat.

    python benchmarks/campaign_v15_power.py --out docs/data/heldout-v15-power [--draws 128]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import campaign_v11 as v11  # noqa: E402
from campaign_v10 import METRICS, POLICIES, _al_se  # noqa: E402
from campaign_v15 import CAMPAIGN  # noqa: E402

DATA = ROOT / "docs" / "data"
SHIPPED = ("heldout-v11", "heldout-v12", "heldout-v13", "heldout-v14")
V14 = DATA / "heldout-v14"
TIMINGS = ("median_tpot_ms", "output_throughput")
AL = "spec_decode_acceptance_length"


def _runs(folder: Path):
    from mtpsim.result import load_result

    for real in sorted(folder.glob("*/real")):
        if all((real / f"{p}.json").is_file() for p in POLICIES):
            yield real.parent.name, {p: load_result(real / f"{p}.json") for p in POLICIES}


def measured_noise() -> dict:
    """SD_round of the timing deltas per configuration, and sigma_k of acceptance length per k."""
    from mtpsim.paired import paired_delta

    rows, sig = [], {}
    for ver in SHIPPED:
        for name, res in _runs(DATA / ver):
            row = {"campaign": ver, "config": name}
            for m in TIMINGS:
                pd = paired_delta(res["fresh"], res["share"], m)
                row[f"sd_round_pct_{m}"] = statistics.stdev(pd.deltas_pct) if pd and pd.n > 2 else None
            rows.append(row)
            for p in POLICIES:
                k = int(res[p].spec["speculative"]["num_speculative_tokens"])
                sig.setdefault(k, []).append(_al_se(res[p]) * math.sqrt(len(res[p].requests)))
    out: dict = {"configs": rows, "sd_round_pct": {}, "sigma_request_al": {}}
    for m in TIMINGS:
        xs = [r[f"sd_round_pct_{m}"] for r in rows if r[f"sd_round_pct_{m}"] is not None]
        out["sd_round_pct"][m] = {"median": statistics.median(xs), "q75": float(np.quantile(xs, 0.75)),
                                  "n_configs": len(xs)}
    for k, xs in sorted(sig.items()):
        out["sigma_request_al"][str(k)] = {"median": statistics.median(xs),
                                           "q75": float(np.quantile(xs, 0.75)), "n_runs": len(xs)}
    return out


def v14_power() -> dict:
    """v14's 36 deltas as scored: measurement SE over predicted effect."""
    rep = json.loads((V14 / "score.json").read_text())
    ratios = [u["power_ratio"] for u in rep["untestable_deltas"]]
    return {"untestable": len(ratios), "power_ratio_median": statistics.median(ratios),
            "power_ratio_min": min(ratios)}


def _log_times(path: Path) -> list[tuple[datetime, str]]:
    out = []
    for line in path.read_text().splitlines():
        t, _, msg = line.partition(" ")
        out.append((datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ"), msg))
    return out


def wall_model() -> dict:
    """wall = a x CPU duration + b x rounds (v14's runs), the start of a run-real, v14's slices."""
    X, y = [], []
    for _name, res in list(_runs(V14)) + [(s.name, {p: _load(s / f"{p}.json") for p in POLICIES})
                                         for s in sorted((V14 / "calibrate").glob("s*"))]:
        for r in res.values():
            rounds = r.extra.rounds or []
            cpu = sum(x["metrics"]["duration"] for x in rounds) if rounds else float(r.get("duration"))
            X.append((cpu, max(len(rounds), 1)))
            y.append(float(r.extra.level["run_wall_s"]))
    (a, b), *_ = np.linalg.lstsq(np.array(X), np.array(y), rcond=None)
    log = _log_times(V14 / "campaign.log")
    done = [(t, m) for t, m in log if m.split(";")[0].endswith("done")]
    gaps, starts, slices = [], [], 0.0
    for (t0, _), (t1, m) in zip(done, done[1:], strict=False):
        gaps.append(((t1 - t0).total_seconds(), m))
    for secs, m in gaps:
        if m.startswith("calibration slice"):
            slices += secs
        else:
            res = dict(_runs_named(V14, m.split(" ")[0]))
            starts.append(secs - sum(float(r.extra.level["run_wall_s"]) for r in res.values()))
    first = (done[0][0] - log[0][0]).total_seconds()  # slice 0, from the start
    return {"wall_per_cpu_s": float(a), "wall_per_round_s": float(b),
            "start_per_run_real_s": statistics.median(starts), "v14_slices_min": (slices + first) / 60,
            "v14_runs": len(y)}


def _load(path: Path):
    from mtpsim.result import load_result

    return load_result(path)


def _runs_named(folder: Path, name: str):
    real = folder / name / "real"
    return [(p, _load(real / f"{p}.json")) for p in POLICIES]


def predictions(draws: int, exp: Path = CAMPAIGN.exp, names: tuple[str, ...] = CAMPAIGN.configs,
                keep: Path | None = None) -> dict:
    """v15's configurations predicted by the registered method, from v14's calibration; with `keep`,
    written to (and read back from) KEEP/predictions/NAME.json."""
    v11.DRAWS = draws
    with tempfile.TemporaryDirectory() as tmp:
        out = keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(V14 / "calibration-bootstrap.json", out / "calibration-bootstrap.json")
        try:
            return {n: v11.predict(out, n, exp) for n in names}
        finally:
            if keep:
                (out / "calibration-bootstrap.json").unlink()  # v14's, shipped there already


def expected(name: str, pred: dict, noise: dict, walls: dict, exp: Path = CAMPAIGN.exp) -> dict:
    from mtpsim.spec import load_experiment

    e = load_experiment(str(exp / f"{name}.toml"))
    w = e.workload
    row: dict = {"config": name, "inside": pred["inside"], "k": e.k, "requests": w.num_prompts,
                 "rounds": w.rounds, "deltas": {}}
    for m in METRICS:
        effect = float(pred["deltas"][m]["0.5"])
        if m == AL:
            s = noise["sigma_request_al"].get(str(e.k))
            se = {q: s[q] * math.sqrt(2 / w.num_prompts) for q in ("median", "q75")} if s else None
        else:
            sd = noise["sd_round_pct"][m]
            se = {q: sd[q] / math.sqrt(w.rounds) for q in ("median", "q75")}
        ratio = {q: v / max(abs(effect), 1e-12) for q, v in se.items()} if se else None
        row["deltas"][m] = {"predicted_effect": effect, "expected_se": se, "power_ratio": ratio,
                            "testable_expected": bool(se and se["median"] <= abs(effect) / 2),
                            # rounds (timings) or requests a policy (acceptance) for SE = effect / 2
                            "needed": _needed(m, effect, noise, e.k)}
    cpu = sum(w.num_prompts * w.output_len / float(pred["levels"][p]["output_throughput"]["0.5"])
              for p in POLICIES)
    row["predicted_cpu_s"] = cpu
    row["minutes"] = (walls["wall_per_cpu_s"] * cpu + walls["wall_per_round_s"] * 2 * w.rounds
                      + walls["start_per_run_real_s"]) / 60
    return row


def _needed(m: str, effect: float, noise: dict, k: int) -> float | None:
    if not effect:
        return None
    if m == AL:
        s = noise["sigma_request_al"].get(str(k))
        return 8 * s["median"] ** 2 / effect ** 2 if s else None
    return (2 * noise["sd_round_pct"][m]["median"] / effect) ** 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DATA / "heldout-v15-power")
    ap.add_argument("--draws", type=int, default=128)
    args = ap.parse_args()
    from mtpsim.fileio import atomic_write_json

    noise, walls = measured_noise(), wall_model()
    preds = predictions(args.draws, keep=args.out)
    rows = [expected(n, preds[n], noise, walls) for n in CAMPAIGN.configs]
    tests_min = sum(r["minutes"] for r in rows)
    n_testable = sum(d["testable_expected"] for r in rows for d in r["deltas"].values())
    res = {"command": f"python benchmarks/campaign_v15_power.py --draws {args.draws}",
           "calibration": "docs/data/heldout-v14/calibration-bootstrap.json (v14's fit)",
           "v14": v14_power(), "noise": noise, "wall_model": walls, "configs": rows,
           "minutes": {"tests": tests_min, "slices_v14": walls["v14_slices_min"],
                       "total": tests_min + walls["v14_slices_min"]},
           "testable_expected": n_testable, "deltas": 3 * len(rows)}
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "power.json", res)
    print(f"v14: {res['v14']}")
    n_cfg = noise["sd_round_pct"]["median_tpot_ms"]["n_configs"]
    sds = ", ".join(f"{m} {v['median']:.1f} % ({v['q75']:.1f})" for m, v in noise["sd_round_pct"].items())
    print(f"SD of one round's delta, median (q75) over {n_cfg} configurations: {sds}")
    print("sigma of one request's acceptance length by k: "
          + ", ".join(f"k{k} {v['median']:.3f}" for k, v in noise["sigma_request_al"].items()))
    print(f"wall model: {walls}")
    for r in rows:
        cells = "  ".join(f"{_short(m)} {d['predicted_effect']:+.3g} SE {d['expected_se']['median']:.3g} "
                          f"r {d['power_ratio']['median']:.2f}{'*' if d['testable_expected'] else ' '}"
                          for m, d in r["deltas"].items() if d["expected_se"])
        print(f"{r['config']:28s} n {r['requests']:3d} R {r['rounds']:2d} {r['minutes']:4.1f} min  {cells}")
    for m in METRICS:
        need = [r["deltas"][m]["needed"] for r in rows if r["deltas"][m]["needed"]]
        print(f"{_short(m)}: for SE = effect / 2 at the median noise, each configuration needs "
              f"{min(need):.0f}-{max(need):.0f} {'requests a policy' if m == AL else 'rounds'} "
              f"(median {statistics.median(need):.0f})")
    print(f"tests {tests_min:.1f} min + slices {walls['v14_slices_min']:.1f} min (v14's) = "
          f"{res['minutes']['total']:.1f} min; expected testable (ratio <= 0.5 at the median noise): "
          f"{n_testable} of {res['deltas']}")


def _short(m: str) -> str:
    return re.sub(r"spec_decode_acceptance_length", "AL", m).replace("median_tpot_ms", "TPOT").replace(
        "output_throughput", "thr")


if __name__ == "__main__":
    main()
