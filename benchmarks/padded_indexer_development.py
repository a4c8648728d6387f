"""Development check (in-sample, on seen data: it tests nothing) of the padded indexer features.

The reference engine scores its batched indexer over [rows, the batch's longest context]
(mtpsim/engine/model.py: `n_keys = input_pos.max() + 1`), so a decode step of requests with
unequal contexts costs as if each had the longest. The fitted cost priced the indexer per
request's own context. A hypothesis for v10/v11's miss (post-hoc replays: the tests' decode steps
cost 0.55-0.87 of the price): fitted on a calibration whose batches mix prompt lengths (256-1,792
tokens, up to 8 at once), the per-pair price absorbed the padding and over-priced the tests'
equal-length bursts. This refits each campaign's calibration from its round traces, once as
mtpsim fits it and once with every decoding (and drafting) request's context replaced by its
batch's longest (`padded`: the indexer features then count what the engine scores; the model
itself is not changed), and replays every test configuration's real steps through both:
measured seconds over priced seconds, prefill steps and decode-only steps apart. Point fits.

    python benchmarks/padded_indexer_development.py [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import tempfile
from pathlib import Path

import mtpsim.calibration.fit as fit
from mtpsim.calibration.fit import fit_traces, padded_quantities
from mtpsim.fileio import atomic_write_json
from mtpsim.models.fitted import FittedCost
from mtpsim.result import PHASES
from mtpsim.trace import Trace, read_trace

ROOT = Path(__file__).resolve().parents[1]


def _traces(real_dir: Path, policies: tuple[str, ...]) -> list[Trace]:
    out = []
    for p in policies:
        for f in sorted(real_dir.glob(f"rounds/r*/{p}.trace.jsonl.gz")):
            with tempfile.NamedTemporaryFile("wb", suffix=".trace.jsonl") as t:
                t.write(gzip.open(f).read())
                t.flush()
                out.append(read_trace(t.name))
    return out


PER_REQUEST = fit.step_quantities
# padded_quantities (mtpsim.calibration.fit, the fit option indexer_keys = "padded"): as
# step_quantities, each step's decoding (and batch-drafting) contexts as requests x the longest


def _ratios(cal, traces: list[Trace], quantities) -> dict[str, float]:
    acc = {"prefill": [0.0, 0.0], "decode": [0.0, 0.0]}
    for tr in traces:
        q, _ = quantities(tr)
        priced = sum(FittedCost(cal, tr.policy, tr.num_speculative_tokens, tr.index_topk).priced(q)[x]
                     for x in PHASES)
        for j, st in enumerate(tr.steps):
            a = acc["prefill" if st.num_prefills else "decode"]
            a[0] += sum(st.phases.values())
            a[1] += float(priced[j])
    return {k: v[0] / v[1] for k, v in acc.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "data" / "padded-indexer-development.json")
    args = ap.parse_args()
    rows, fits = [], {}
    forms = {"per_request": PER_REQUEST, "padded": padded_quantities}
    for campaign in ("v10", "v11"):
        data = ROOT / "docs" / "data" / f"heldout-{campaign}"
        cal_traces = _traces(data / "calibrate", ("fresh", "share"))
        cals = {}
        for form, quantities in forms.items():
            fit.step_quantities = quantities  # what fit_cost reads the steps with
            cals[form] = fit_traces(cal_traces)
        fit.step_quantities = PER_REQUEST
        fits[campaign] = {f: {"verify": dict(zip(c.cost.phases["verify"].features,
                                                  c.cost.phases["verify"].coef, strict=True)),
                              "step_r2": c.cost.report["step_r2"]} for f, c in cals.items()}
        for form, c in cals.items():
            r = _ratios(c, cal_traces, forms[form])
            rows.append({"campaign": campaign, "config": "calibrate (in-sample)", "form": form, **r})
        for real in sorted(data.glob("*/real")):
            tests = _traces(real, ("fresh", "share"))
            for form, c in cals.items():
                r = _ratios(c, tests, forms[form])
                rows.append({"campaign": campaign, "config": real.parent.name, "form": form, **r})
                print(f"{campaign} {real.parent.name:28s} {form:12s} prefill {r['prefill']:.2f} "
                      f"decode {r['decode']:.2f}", flush=True)
    summary = {}
    for campaign in ("v10", "v11"):
        for form in ("per_request", "padded"):
            xs = [r["decode"] for r in rows if r["campaign"] == campaign and r["form"] == form
                  and not r["config"].startswith("calibrate")]
            summary[f"{campaign} {form}"] = {"decode_median": statistics.median(xs), "min": min(xs),
                                             "max": max(xs)}
            print(f"{campaign} {form}: test decode steps measured/priced median {statistics.median(xs):.2f} "
                  f"({min(xs):.2f}-{max(xs):.2f})")
    atomic_write_json(args.out, {"rows": rows, "summary": summary, "fits": fits,
                                 "note": "in-sample development on seen data (v10, v11); point fits; "
                                         "timings not probe-scaled"})


if __name__ == "__main__":
    main()
