"""A campaign's real steps replayed through its own calibration (v10: in-sample development on
seen data; v11, v12, v13: a post-hoc look at the registered campaign's data, NOT part of its score): per
configuration, the measured seconds of its prefill steps and of its decode-only steps over what the
calibration's cost model prices for exactly those steps, and the rounds-simulated median TPOT /
TTFT (workload.rounds = the rounds each ran) with and without that measured cost level. If the
simulated schedule were wrong (scheduler, prefill batching), the corrected ratios would miss too.

    python benchmarks/step_replay.py [--campaign v10|v11|v12|v13] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import tempfile
from pathlib import Path

from mtpsim.calibration.fit import step_quantities
from mtpsim.calibration.schema import read_calibration
from mtpsim.fileio import atomic_write_json
from mtpsim.models.fitted import FittedCost
from mtpsim.result import PHASES, load_result
from mtpsim.sim.simulator import simulate
from mtpsim.spec import load_experiment
from mtpsim.trace import read_trace

ROOT = Path(__file__).resolve().parents[1]


def replay(name: str, cal, cal_path: str, data: Path, campaign: str) -> dict:
    real_dir = data / name / "real"
    real = load_result(real_dir / "fresh.json")
    rounds = len(real.extra.rounds)
    sim = simulate(load_experiment(str(ROOT / "experiments" / "heldout" / campaign / f"{name}.toml"),
                                   [f"calibration.file={json.dumps(cal_path)}", f"workload.rounds={rounds}"]),
                   "fresh")
    acc = {"pre": [0.0, 0.0], "dec": [0.0, 0.0]}
    for f in sorted(real_dir.glob("rounds/r*/fresh.trace.jsonl.gz")):
        with tempfile.NamedTemporaryFile("wb", suffix=".trace.jsonl") as t:
            t.write(gzip.open(f).read())
            t.flush()
            tr = read_trace(t.name)
        q, _ = step_quantities(tr)
        pr = FittedCost(cal, "fresh", tr.num_speculative_tokens, tr.index_topk).priced(q)
        priced = sum(pr[x] for x in PHASES)
        for j, st in enumerate(tr.steps):
            key = "pre" if st.num_prefills else "dec"
            acc[key][0] += sum(st.phases.values())
            acc[key][1] += float(priced[j])
    rp, rd = acc["pre"][0] / acc["pre"][1], acc["dec"][0] / acc["dec"][1]
    tpot, ttft = sim.get("median_tpot_ms") / real.get("median_tpot_ms"), sim.get("median_ttft_ms") / real.get(
        "median_ttft_ms")
    return {"config": name, "rounds": rounds, "prefill_steps_measured_over_calibrated": rp,
            "decode_steps_measured_over_calibrated": rd, "steps_sim": sim.extra.num_steps,
            "steps_real": real.extra.num_steps, "tpot_pred_over_real": tpot,
            "tpot_pred_x_decode_ratio_over_real": tpot * rd, "ttft_pred_over_real": ttft,
            "ttft_pred_x_prefill_ratio_over_real": ttft * rp}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", choices=("v10", "v11", "v12", "v13"), default="v10")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    data = ROOT / "docs" / "data" / f"heldout-{a.campaign}"
    out = a.out or (data / "development-rounds" / "step-replay.json" if a.campaign == "v10"
                    else data / "step-replay.json")
    cal_path = str(data / "calibration-bootstrap.json")
    cal = read_calibration(cal_path)
    rows = [replay(p.parent.name, cal, cal_path, data, a.campaign) for p in sorted(data.glob("*/real"))]
    summary = {}
    for k, v in rows[0].items():
        if isinstance(v, float):
            xs = [r[k] for r in rows]
            summary[k] = {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}
            print(f"{k}: median {statistics.median(xs):.2f}, {min(xs):.2f}-{max(xs):.2f}")
    atomic_write_json(out, {"rows": rows, "summary": summary, "campaign": a.campaign,
                            "note": "post-hoc (v10: in-sample development); timings not probe-scaled"})


if __name__ == "__main__":
    main()
