"""Between-request heterogeneity of acceptance in real traces (issue 20; docs/uncertainty.md §23).

For every trace of the held-out campaigns' data (calibration slices and configurations, both
policies): per request its decode steps' accepted drafts. Prints, per trace, the acceptance length,
its SE over requests (a request bootstrap, as the campaigns' `measurement_se`), the SE that
independent steps drawn from the run's pooled accepted-count distribution would give (no
per-request variation, no autocorrelation), their variance ratio (the overdispersion factor phi),
and the within-request lag-1 autocorrelation of accepted counts. Post hoc, on seen data.

    python benchmarks/acceptance_dispersion.py docs/data/heldout-v14 docs/data/heldout-v15 \
        docs/data/heldout-v16 [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import numpy as np


def request_steps(paths: list[Path]) -> list[np.ndarray]:
    """Per request (in id order) its steps' accepted-draft counts (drafting steps only); `paths`:
    one pooled trace, or a run's rounds (request ids are workload-wide)."""
    steps: dict[str, list[int]] = {}
    for path in paths:
        with gzip.open(path, "rt") as f:
            for line in f:
                rec = json.loads(line)
                for q in rec.get("requests") or []:
                    if q.get("drafted"):
                        steps.setdefault(str(q["id"]), []).append(int(sum(q["accepted"])))
    return [np.array(v, float) for _, v in sorted(steps.items(), key=lambda kv: int(kv[0]))]


def dispersion(reqs: list[np.ndarray], boot: int = 1000) -> dict[str, float]:
    a = np.array([r.sum() for r in reqs])
    n = np.array([r.size for r in reqs], float)
    al = 1 + a.sum() / n.sum()
    idx = np.random.default_rng(0).integers(0, len(a), (boot, len(a)))
    se_boot = float(np.std(1 + a[idx].sum(1) / n[idx].sum(1), ddof=1))
    allsteps = np.concatenate(reqs)
    se_iid = float(np.sqrt(allsteps.var() / allsteps.size))
    # within-request lag-1 autocorrelation of accepted counts about each request's own mean
    num = den = 0.0
    for r in reqs:
        d = r - r.mean()
        num += float((d[1:] * d[:-1]).sum())
        den += float((d * d).sum())
    # per-request rate spread beyond binomial: Pearson chi2 / dof with the pooled per-step variance
    p = a.sum() / n.sum()
    phi_pearson = float((((a - n * p) ** 2) / (n * allsteps.var())).sum() / (len(a) - 1))
    return {"requests": len(a), "steps": int(n.sum()), "al": float(al), "se_boot": se_boot,
            "se_iid": se_iid, "phi": (se_boot / se_iid) ** 2, "phi_pearson": phi_pearson,
            "lag1": num / den if den else 0.0}


def traces(root: Path):
    """(kind, name, policy, trace files): configurations' pooled traces (or, where a campaign
    shipped none, their rounds'), then calibration slices'."""
    for real in sorted(root.glob("*/real")):
        for pol in ("fresh", "share"):
            pooled = real / f"{pol}.trace.jsonl.gz"
            paths = [pooled] if pooled.is_file() else sorted(real.glob(f"rounds/*/{pol}.trace.jsonl.gz"))
            if paths:
                yield "config", real.parent.name, pol, paths
    for p in sorted(root.glob("calibrate/*/*.trace.jsonl.gz")):
        yield "calibration", p.parts[-2], p.name.split(".")[0], [p]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = []
    for root in args.roots:
        for kind, name, policy, paths in traces(root):
            reqs = request_steps(paths)
            if len(reqs) < 3:
                continue
            rows.append({"campaign": root.name, "kind": kind, "name": name, "policy": policy,
                         **dispersion(reqs)})
    print(f"{'campaign':<13}{'kind':<12}{'name':<28}{'pol':<6}{'R':>4}{'AL':>7}{'se_boot':>9}"
          f"{'se_iid':>8}{'phi':>6}{'phiP':>6}{'lag1':>7}")
    for r in rows:
        print(f"{r['campaign']:<13}{r['kind']:<12}{r['name']:<28}{r['policy']:<6}{r['requests']:>4}"
              f"{r['al']:>7.3f}{r['se_boot']:>9.4f}{r['se_iid']:>8.4f}{r['phi']:>6.2f}"
              f"{r['phi_pearson']:>6.2f}{r['lag1']:>7.3f}")
    for kind in ("calibration", "config"):
        sel = [r for r in rows if r["kind"] == kind]
        if sel:
            print(f"{kind}: {len(sel)} traces, median phi {np.median([r['phi'] for r in sel]):.2f}"
                  f" (IQR {np.quantile([r['phi'] for r in sel], .25):.2f}-"
                  f"{np.quantile([r['phi'] for r in sel], .75):.2f}), median lag1 "
                  f"{np.median([r['lag1'] for r in sel]):.3f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
