"""Which overlap -> acceptance penalty follows the per-position `share` penalty: `kappa` (one
kappa), `kappa_step` (a kappa per draft step) or `kappa_lk` (a kappa per step scaled by
(L/K)^gamma), on the calibration traces and on held-out runs.

    python benchmarks/penalty_model.py --traces runs/heldout/calibrate \\
        --heldout experiments/reference-cpu.toml=docs/data/reference-cpu \\
        --heldout experiments/heldout/k2-conc4.toml=runs/heldout/k2-conc4/real \\
        --campaign docs/campaign/base --boot 40

1. Fit (mtpsim.calibration.fit) to the traces (a folder is searched for *.trace.jsonl). Rounds
   whose tokens repeat an earlier trace of the same policy (the reference engine's seeded rounds)
   are dropped from the acceptance fit: they repeat the same draws and would only narrow the CIs.
2. Per form: its parameters with request-bootstrap 95 % CIs (request ids resampled with
   replacement, the same ids in every trace: mtpsim.uncertainty.bootstrap), the `share` fit per
   position, and R² over context bins (6 context bins x k positions, weighted by events, as the
   calibration report computes it). `kappa` is shown twice: with each event's own overlap (what
   it is fitted on, the calibration report's R²) and with the fitted overlap curve (what the
   simulator feeds in).
3. The R² a perfect model would reach on data this noisy: the kappa_lk fit's own R² on
   `--sims` data sets drawn from it (same requests, contexts and overlaps; fresh request shifts).
4. Held out: each EXP=DIR pair is simulated with the calibration (engine.scheduler reference,
   acceptance.mode expected) under both forms, and the predicted per-position `share` - `fresh`
   difference (vLLM's per-position rates, pp) is set beside the real run's difference with its
   request-level bootstrap 95 % CI (mtpsim.compare.ab_compare) in DIR/{fresh,share}.json.
`--json` prints everything as JSON; `--out FILE` writes it too.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from mtpsim.calibration.fit import CONTEXT_BINS, GH_NODES, acceptance_events, fit_traces
from mtpsim.calibration.schema import Calibration
from mtpsim.fileio import atomic_write_json
from mtpsim.models.fitted import FittedAcceptance
from mtpsim.trace import Trace, read_trace

FORMS = ("kappa", "kappa_step", "kappa_lk")


def load_traces(paths: list[Path]) -> tuple[list[Trace], list[str]]:
    files = [f for p in paths for f in (sorted(p.rglob("*.trace.jsonl")) if p.is_dir() else [p])]
    if not files:
        sys.exit(f"--traces: no *.trace.jsonl under {', '.join(map(str, paths))}")
    return [read_trace(f) for f in files], [str(f) for f in files]


def _tokens(tr: Trace) -> tuple:
    return tuple(sorted((r.id, r.context_len, tuple(r.accepted)) for st in tr.steps for r in st.requests))


def distinct(traces: list[Trace]) -> list[Trace]:
    """Drop traces that repeat an earlier one's policy and verified drafts exactly."""
    seen, out = set(), []
    for tr in traces:
        key = (tr.policy, _tokens(tr))
        if key not in seen:
            seen.add(key)
            out.append(tr)
    return out


def predicted_rates(cal: Calibration, form: str, policy: str, ctx: np.ndarray, pos: np.ndarray,
                    k: int, topk: np.ndarray) -> np.ndarray:
    """The model's conditional rate of each event, averaged over the request spread."""
    nodes, weights = np.polynomial.hermite.hermgauss(GH_NODES)
    out = np.zeros(ctx.size)
    for K in np.unique(topk):
        m = topk == K
        acc = FittedAcceptance(cal, policy, k, int(K), form)
        mean = sum(w * acc.conditional(ctx[m], np.full(int(m.sum()), math.sqrt(2) * cal.acceptance.sigma * z))
                   for z, w in zip(nodes, weights, strict=True)) / math.sqrt(math.pi)
        out[m] = mean[np.arange(int(m.sum())), pos[m]]
    return out


def binned_r2(d: dict[str, np.ndarray], pred: np.ndarray, k: int) -> float:
    """R² of observed vs predicted rate over (position, context bin) cells, weighted by events."""
    edges = np.quantile(d["ctx"], np.linspace(0, 1, CONTEXT_BINS + 1))
    b = np.clip(np.searchsorted(edges, d["ctx"], side="right") - 1, 0, CONTEXT_BINS - 1)
    obs, fit, w = [], [], []
    for i in range(k):
        for j in range(CONTEXT_BINS):
            m = (d["pos"] == i) & (b == j)
            if m.sum() >= 5:
                obs.append(d["y"][m].mean())
                fit.append(pred[m].mean())
                w.append(m.sum())
    o, f, wa = np.asarray(obs), np.asarray(fit), np.asarray(w, float)
    mu = np.average(o, weights=wa)
    return 1 - float(np.sum(wa * (o - f) ** 2) / np.sum(wa * (o - mu) ** 2))


def share_fit(cal: Calibration, traces: list[Trace], form: str, own_overlap: bool) -> dict[str, Any]:
    ev = acceptance_events(traces)
    d = ev.arrays(["share"])
    k = int(d["pos"].max()) + 1
    pred = predicted_rates(cal, form, "share", d["ctx"], d["pos"], k, d["topk"])
    if own_overlap:  # the kappa form on each event's recorded overlap, as it is fitted
        from mtpsim.models.penalty import keep_factor

        curve = np.ones_like(pred)
        pos1 = d["pos"] > 0
        curve[pos1] = keep_factor(_curve_overlap(cal, d)[pos1], cal.acceptance.kappa)
        pred = pred / curve * keep_factor(np.clip(d["ovl"], 0, 1), cal.acceptance.kappa)
    per_pos = [{"pos": i, "n": int((d["pos"] == i).sum()), "observed": float(d["y"][d["pos"] == i].mean()),
                "predicted": float(pred[d["pos"] == i].mean())} for i in range(k)]
    return {"r2": binned_r2(d, pred, k), "per_position": per_pos}


def _curve_overlap(cal: Calibration, d: dict[str, np.ndarray]) -> np.ndarray:
    from mtpsim.calibration.fit import curve_overlap

    return curve_overlap(d, cal.overlap)


def params_of(cal: Calibration) -> dict[str, list[float]]:
    """Each form's parameters (kappa_lk: its per-step kappas at its reference L/K, then gamma)."""
    a = cal.acceptance
    lk = a.kappa_lk or {}
    return {"kappa": [a.kappa] if a.kappa is not None else [], "kappa_step": list(a.kappa_steps or []),
            "kappa_lk": [*lk.get("kappa_steps", []), lk["exponent"]] if lk else []}


def bootstrap(traces: list[Trace], n: int, seed: int) -> list[dict[str, list[float]]]:
    from mtpsim.calibration.fit import fit_acceptance, fit_overlap
    from mtpsim.uncertainty.bootstrap import _request_resample

    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        boot = _request_resample(traces, rng)
        a = fit_acceptance(boot, fit_overlap(boot))
        # kappa_lk's kappas at the full data's reference L/K are not comparable across refits
        # (each refit has its own reference): its gamma is what the CI is for
        lk = a.kappa_lk or {}
        out.append({"kappa": [a.kappa], "kappa_step": list(a.kappa_steps or []),
                    "kappa_lk": [*lk.get("kappa_steps", []), lk["exponent"]] if lk else []})
        print(f"  bootstrap {i + 1}/{n}", file=sys.stderr, flush=True)
    return out


def ceiling(cal: Calibration, traces: list[Trace], sims: int, seed: int,
            form: str = "kappa_lk") -> list[float]:
    """R² of the `form` fit on data drawn from it (its R² if it were the truth)."""
    rng = np.random.default_rng(seed)
    share = [tr for tr in traces if tr.policy == "share"]
    k = max(tr.num_speculative_tokens for tr in share)
    # every verification's full k positions, to redraw which positions are reached
    recs = [(tr.index_topk, r) for tr in share for st in tr.steps for r in st.requests if r.drafted]
    ctx = np.asarray([r.context_len for _, r in recs], float)
    K = np.asarray([t for t, _ in recs], float)
    rid = np.unique([r.id for _, r in recs], return_inverse=True)[1]
    drafted = np.asarray([r.drafted for _, r in recs])
    out = []
    for _ in range(sims):
        u = rng.normal(0, cal.acceptance.sigma, rid.max() + 1)[rid]
        cond = np.zeros((ctx.size, k))
        for KK in np.unique(K):
            m = K == KK
            cond[m] = FittedAcceptance(cal, "share", k, int(KK), form).conditional(ctx[m], u[m])
        ok = np.cumprod(rng.random(cond.shape) < cond, axis=1)
        reached = np.concatenate([np.ones((ctx.size, 1), bool), ok[:, :-1].astype(bool)], axis=1)
        reached &= np.arange(k)[None, :] < drafted[:, None]
        ii, pp = np.nonzero(reached)
        sim = {"ctx": ctx[ii], "pos": pp, "y": ok[ii, pp].astype(float)}
        pred = predicted_rates(cal, form, "share", ctx[ii], pp, k, K[ii])
        out.append(binned_r2(sim, pred, k))
    return out


def heldout(cal: Calibration, exp_path: str, real_dir: Path) -> dict[str, Any]:
    from mtpsim.compare import ab_compare
    from mtpsim.result import load_result
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec.experiment import load_experiment

    a, b = load_result(real_dir / "fresh.json"), load_result(real_dir / "share.json")
    rep = ab_compare(a, b)
    rows = {r.key: r for r in rep.rows}
    sets = ["engine.scheduler=reference", "acceptance.mode=expected", "policies=[\"fresh\", \"share\"]"]
    pred: dict[str, list[float]] = {}
    for form in FORMS:
        exp = load_experiment(exp_path, [*sets, f"acceptance.penalty={form}"])
        rates = {p: simulate(exp, p, calibration=cal).metrics["spec_decode_per_position_acceptance_rates"]
                 for p in ("fresh", "share")}
        pred[form] = [100 * (s - f) for f, s in zip(rates["fresh"], rates["share"], strict=True)]
    out = []
    for i in range(1, len(pred[FORMS[0]])):
        r = rows.get(f"pos{i}")
        if r is None or math.isnan(r.ci_low):
            continue
        out.append({"pos": i, "real": r.delta, "lo": r.ci_low, "hi": r.ci_high,
                    **{form: pred[form][i] for form in FORMS},
                    **{f"{form}_within": bool(r.ci_low <= pred[form][i] <= r.ci_high) for form in FORMS}})
    return {"experiment": exp_path, "real": str(real_dir), "requests": rep.num_requests, "positions": out}


def campaign(cal: Calibration, folder: Path) -> list[dict[str, Any]]:
    """Held out too: the acceptance campaign's fresh/share cells (benchmarks/campaign_acceptance.py;
    other contexts, k 3, batch 6), predicted from the calibration's expected marginal rates over
    the cell's contexts (prompt .. prompt + output)."""
    store = json.loads((folder / "acceptance.json").read_text())
    args, out = store["args"], []
    for row in store["summary"]:
        if row["policy"] != "share":
            continue
        L = row["context"]
        ctx = np.linspace(L, L + args["output_len"], 9)
        pred = {}
        for form in FORMS:
            m = {p: FittedAcceptance(cal, p, args["k"], args["topk"], form).marginal(ctx).mean(axis=0)
                 for p in ("fresh", "share")}
            pred[form] = 100 * (m["share"] - m["fresh"])
        for pos in row["positions"][1:]:  # 1-based positions 2.. = draft steps >= 1
            i = pos["pos"] - 1
            out.append({"context": L, "temperature": row["temperature"], "pos": i, "real": pos["diff"],
                        "lo": pos["diff_lo"], "hi": pos["diff_hi"], "requests": row["requests"],
                        **{form: float(pred[form][i]) for form in FORMS},
                        **{f"{form}_within": bool(pos["diff_lo"] <= pred[form][i] <= pos["diff_hi"])
                           for form in FORMS}})
    return out


def ci(values: list[float]) -> tuple[float, float]:
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=Path, nargs="+", required=True)
    ap.add_argument("--heldout", action="append", default=[], metavar="EXP=DIR")
    ap.add_argument("--campaign", type=Path, action="append", default=[],
                    help="an acceptance-campaign folder of the same model size (held out)")
    ap.add_argument("--boot", type=int, default=40, help="bootstrap refits for the CIs (0: none)")
    ap.add_argument("--sims", type=int, default=100, help="data sets for the R² ceiling")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    traces, files = load_traces(a.traces)
    cal = fit_traces(traces, files)
    uniq = distinct(traces)
    res: dict[str, Any] = {"traces": files, "distinct_traces": len(uniq), "params": params_of(cal)}
    res["share"] = {"kappa (own overlap, as fitted)": share_fit(cal, uniq, "kappa", True),
                    "kappa (overlap curve, as simulated)": share_fit(cal, uniq, "kappa", False),
                    "kappa_step (overlap curve)": share_fit(cal, uniq, "kappa_step", False),
                    "kappa_lk (overlap curve)": share_fit(cal, uniq, "kappa_lk", False)}
    if a.boot:
        boots = bootstrap(uniq, a.boot, a.seed)
        res["ci"] = {form: [ci([b[form][j] for b in boots if len(b[form]) > j])
                            for j in range(len(res["params"][form]))] for form in FORMS}
    if a.sims:
        r2s = ceiling(cal, uniq, a.sims, a.seed)
        res["r2_if_true"] = {"form": "kappa_lk", "median": float(np.median(r2s)),
                             "p05": float(np.percentile(r2s, 5)),
                             "p95": float(np.percentile(r2s, 95)),
                             "share_at_least_0.9": float(np.mean(np.asarray(r2s) >= 0.9))}
    res["heldout"] = []
    for pair in a.heldout:
        exp, sep, real = pair.partition("=")
        if not sep:
            sys.exit(f"--heldout {pair!r}: expected EXP.toml=RESULT_DIR")
        res["heldout"].append(heldout(cal, exp, Path(real)))
    res["campaign"] = [{"folder": str(f), "cells": campaign(cal, f)} for f in a.campaign]
    if a.out:
        atomic_write_json(a.out, res)
    if a.json:
        print(json.dumps(res, indent=1))
        return
    print_report(res)


def print_report(res: dict[str, Any]) -> None:
    print(f"Traces: {len(res['traces'])} ({res['distinct_traces']} distinct in tokens)")
    print("\nParameters (95 % CI, request bootstrap):")
    for form in FORMS:
        vals = res["params"][form]
        cis = res.get("ci", {}).get(form, [None] * len(vals))
        txt = ", ".join(f"{v:.2f}" + (f" [{c[0]:.2f}, {c[1]:.2f}]" if c else "")
                        for v, c in zip(vals, cis, strict=True))
        label = {"kappa_step": "per draft step 1..k-1: ",
                 "kappa_lk": "per draft step 1..k-1 at the reference L/K, then gamma: "}.get(form, "")
        print(f"  {form:10s} {label}{txt}")
    print("\nshare, conditional rate per position: observed / fitted (%), R² over context bins")
    for name, fit in res["share"].items():
        pp = "  ".join(f"{100 * p['observed']:.1f}/{100 * p['predicted']:.1f}" for p in fit["per_position"])
        print(f"  {name:38s} R² {fit['r2']:.3f}   {pp}")
    if "r2_if_true" in res:
        c = res["r2_if_true"]
        print(f"  R² the {c['form']} model reaches on data drawn from itself: median {c['median']:.3f} "
              f"(90 %: {c['p05']:.3f}-{c['p95']:.3f}); >= 0.9 in {100 * c['share_at_least_0.9']:.0f} %")
    if res["heldout"]:
        print("\nHeld out: share - fresh per position (pp, vLLM's per-position rates); real with its "
              "95 % CI; predicted (within the CI?)")
        for h in res["heldout"]:
            print(f"  {h['experiment']} ({h['requests'][0]} requests per policy)")
            for p in h["positions"]:
                print(f"    pos {p['pos']}: real {p['real']:+.2f} [{p['lo']:+.2f}, {p['hi']:+.2f}]   "
                      + _forms(p))
    for c in res.get("campaign", []):
        print(f"  {c['folder']} (acceptance campaign; T = 0 is outside the calibration's T = 1)")
        for p in c["cells"]:
            print(f"    L {p['context']}, T {p['temperature']:g}, pos {p['pos']}: real {p['real']:+.2f} "
                  f"[{p['lo']:+.2f}, {p['hi']:+.2f}]   " + _forms(p))
    pairs = [p for h in res["heldout"] for p in h["positions"]]
    if pairs:
        print("\nHeld-out (run, position) pairs with the prediction inside the real 95 % CI: "
              + ", ".join(f"{f} {sum(p[f + '_within'] for p in pairs)}/{len(pairs)}" for f in FORMS))


def _forms(p: dict[str, Any]) -> str:
    return "   ".join(f"{f} {p[f]:+.2f} ({'yes' if p[f + '_within'] else 'no'})" for f in FORMS)

if __name__ == "__main__":
    main()
