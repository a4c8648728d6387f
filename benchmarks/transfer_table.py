"""Transfer table: the overlap and penalty parameters per reference-model size, their trend with
size, and the range they imply for DeepSeek-V3.2 (K = 2,048 at 8-128 K contexts, L/K 4-64).

    python benchmarks/transfer_table.py docs/campaign/small docs/campaign/base docs/campaign/large \\
        --engine-fit base=docs/data/penalty-pooled/fit-bootstrap.json --out docs/campaign/transfer

Per size folder (from benchmarks/campaign_overlap.py and campaign_acceptance.py; a size whose
files are missing is listed as "not measured"):
- overlap.json -> the overlap model per draft step s, agreement beyond chance
  c_s(L) = sigmoid(u0_s + u1_s ln(L/K)) through mtpsim.models.overlap's formula, least squares on
  every window's records (L = sample position + 1); 95 % CIs: bootstrap over windows.
- acceptance.json -> the penalty per draft step at temperature 1: kappa_s of
  a_share = a_fresh * (1 - (1 - o_s)^kappa_s), a_fresh each cell's fresh conditional rate, o_s
  the campaign's mean overlap at the cell's context and the engine's top-k; maximum likelihood
  over the cells' conditional events; 95 % CIs: bootstrap over requests (paired: both policies
  served the same prompts).
- `--engine-fit SIZE=FILE`: kappa per draft step from the engine's calibration traces
  (benchmarks/penalty_model.py --out FILE), a second, larger penalty measurement.
Then for DeepSeek-V3.2: every size's overlap curves at L/K 4-64 (K = 2,048), mapped to the
spec's parametric priors (overlap_agreement = c_1, overlap_step_exponent from c_2 = c_1^(2^x),
critical_entries = kappa_1, critical_step_exponent from kappa_2 = kappa_1 * 2^x), and widened
because two or three under-trained byte models cannot pin a 671 B model's values.
Writes OUT.json and OUT.md and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import least_squares, minimize_scalar

from mtpsim.fileio import atomic_write_json, atomic_write_text
from mtpsim.models.overlap import agreement_curve, overlap_from_agreement
from mtpsim.models.penalty import keep_factor

DSV32_K = 2048
DSV32_RATIOS = (4, 8, 16, 32, 64)  # L = 8 K .. 128 K at K = 2,048
KAPPA_MAX = 1e4


def fit_overlap(records: list[dict[str, Any]], step: int) -> tuple[float, float]:
    pts = np.asarray([(r["position"] + 1, r["topk"], r["overlap"]) for r in records
                      if r["step"] == step], float)
    L, K, o = pts.T

    def resid(u: np.ndarray) -> np.ndarray:
        return overlap_from_agreement("share", L, step, K, agreement_curve(u[0], u[1], L, K)) - o

    sol = least_squares(resid, np.array([-1.0, 0.0]), bounds=([-15, -10], [15, 10]))
    return float(sol.x[0]), float(sol.x[1])


def overlap_params(store: dict[str, Any], boot: int, rng: np.random.Generator) -> dict[str, Any]:
    wins = list(store["windows"].values())
    steps = sorted({r["step"] for w in wins for r in w})
    out: dict[str, Any] = {"windows": len(wins), "contexts": store["args"]["contexts"], "steps": {}}
    for s in steps:
        est = fit_overlap([r for w in wins for r in w], s)
        reps = []
        for _ in range(boot):
            pick = rng.integers(0, len(wins), len(wins))
            reps.append(fit_overlap([r for i in pick for r in wins[i]], s))
        out["steps"][s] = {"u0": est[0], "u1": est[1], "boot": reps}
    return out


def mean_overlap(store: dict[str, Any], context: int, topk: int, step: int) -> float:
    vals = [r["overlap"] for w in store["windows"].values() for r in w
            if r["context"] == context and r["topk"] == topk and r["step"] == step]
    return float(np.mean(vals)) if vals else math.nan


def _cond_counts(reqs: list[dict[str, Any]], i: int) -> tuple[np.ndarray, np.ndarray]:
    """Per request: trials and successes of conditional position i (0-based)."""
    acc = np.asarray([r["accepted_per_pos"] for r in reqs], float)
    trials = np.asarray([r["drafts"] for r in reqs], float) if i == 0 else acc[:, i - 1]
    return trials, acc[:, i]


def penalty_params(acc: dict[str, Any], ovl: dict[str, Any] | None, boot: int,
                   rng: np.random.Generator) -> dict[str, Any]:
    """kappa per draft step from the campaign's fresh/share cells at temperature 1."""
    args = acc["args"]
    cells = acc["cells"]
    ctxs = sorted({int(k.split("|")[0]) for k in cells if k.endswith("|1|share")})
    k = args["k"]
    out: dict[str, Any] = {"contexts": ctxs, "requests": args["requests"],
                           "output_len": args["output_len"], "steps": {}}
    if ovl is None:
        out["note"] = "no overlap campaign for this size: kappa needs the overlap"
        return out
    for s in range(1, k):
        data = []
        for L in ctxs:
            f, sh = cells.get(f"{L}|1|fresh"), cells.get(f"{L}|1|share")
            o = mean_overlap(ovl, _ctx_key(ovl, L), args["topk"], s)
            if f is None or sh is None or math.isnan(o):
                continue
            data.append((_cond_counts(f, s), _cond_counts(sh, s), o, L))
        if not data:
            continue

        def fit(idx: list[np.ndarray] | None, data: list = data) -> float:
            terms = []
            for j, ((ft, fs), (st, ss), o, _) in enumerate(data):
                ix = slice(None) if idx is None else idx[j]
                a = fs[ix].sum() / max(ft[ix].sum(), 1)
                terms.append((st[ix].sum(), ss[ix].sum(), a, o))

            def nll(log_kappa: float) -> float:
                tot = 0.0
                for n, y, a, o in terms:
                    p = float(np.clip(a * keep_factor(o, math.exp(log_kappa)), 1e-9, 1 - 1e-9))
                    tot -= y * math.log(p) + (n - y) * math.log1p(-p)
                return tot

            grid = np.linspace(math.log(0.05), math.log(KAPPA_MAX), 40)
            best = int(np.argmin([nll(g) for g in grid]))
            sol = minimize_scalar(nll, bounds=(grid[max(best - 1, 0)], grid[min(best + 1, 39)]),
                                  method="bounded")
            if nll(float(sol.x)) >= nll(grid[-1]) - 1e-6:  # no penalty resolved: kappa unbounded
                return KAPPA_MAX
            return math.exp(float(sol.x))

        n_req = len(cells[f"{data[0][3]}|1|fresh"])
        reps = [fit([rng.integers(0, n_req, n_req) for _ in data]) for _ in range(boot)]
        out["steps"][s] = {"kappa": fit(None), "boot": reps,
                           "cells": [{"context": L, "overlap": o, "fresh": float(fs.sum() / ft.sum()),
                                      "share": float(ss.sum() / st.sum())}
                                     for (ft, fs), (st, ss), o, L in data]}
    return out


def _ctx_key(ovl: dict[str, Any], L: int) -> int:
    """The overlap campaign's context nearest L (8188 stands for 8 K where RoPE stops at 8,192)."""
    return min(ovl["args"]["contexts"], key=lambda c: abs(c - L))


def ci(values: list[float]) -> tuple[float, float]:
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def dsv32_agreement(u: tuple[float, float]) -> list[float]:
    L = np.asarray(DSV32_RATIOS, float) * DSV32_K
    return agreement_curve(u[0], u[1], L, DSV32_K).tolist()


def dsv32_overlap(u: tuple[float, float], step: int) -> list[float]:
    L = np.asarray(DSV32_RATIOS, float) * DSV32_K
    return overlap_from_agreement("share", L, step, DSV32_K, agreement_curve(u[0], u[1], L, DSV32_K)).tolist()


def step_exponent(c1: float, c2: float) -> float:
    """x in c2 = c1 ** (2 ** x) (the spec's agreement decay from step 1 to step 2)."""
    if not (0 < c1 < 1 and 0 < c2 < 1):
        return math.nan
    return math.log2(math.log(c2) / math.log(c1))


def build(dirs: list[Path], engine_fits: dict[str, Path], boot: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    sizes: dict[str, Any] = {}
    for d in dirs:
        name = d.name
        row: dict[str, Any] = {"folder": str(d)}
        ovl = json.loads((d / "overlap.json").read_text()) if (d / "overlap.json").exists() else None
        acc = json.loads((d / "acceptance.json").read_text()) if (d / "acceptance.json").exists() else None
        row["params"] = (ovl or acc or {}).get("args", {}).get("params")
        row["overlap"] = overlap_params(ovl, boot, rng) if ovl else None
        row["penalty"] = penalty_params(acc, ovl, boot * 5, rng) if acc else None
        if name in engine_fits:
            e = json.loads(engine_fits[name].read_text())
            row["engine_penalty"] = {"kappa_step": e["params"]["kappa_step"],
                                     "ci": e.get("ci", {}).get("kappa_step"),
                                     "kappa": e["params"]["kappa"], "kappa_ci": e.get("ci", {}).get("kappa"),
                                     "r2": {n: f["r2"] for n, f in e["share"].items()}}
            lk = e["params"].get("kappa_lk")  # [kappa_1..kappa_{k-1}, gamma]
            if lk:
                lk_ci = e.get("ci", {}).get("kappa_lk")
                row["engine_penalty"]["lk_exponent"] = lk[-1]
                row["engine_penalty"]["lk_exponent_ci"] = lk_ci[-1] if lk_ci else None
        sizes[name] = row
    return {"sizes": sizes, "dsv32": implied(sizes)}


def implied(sizes: dict[str, Any]) -> dict[str, Any]:
    """Ranges for DeepSeek-V3.2 over every measured size, its CI and L/K 4-64."""
    agree: dict[int, list[float]] = {}
    ovl: dict[int, list[float]] = {}
    expo: list[float] = []
    for row in sizes.values():
        o = row.get("overlap")
        if not o:
            continue
        for s, p in o["steps"].items():
            for u in [(p["u0"], p["u1"]), *p["boot"]]:
                agree.setdefault(int(s), []).extend(dsv32_agreement(u))
                ovl.setdefault(int(s), []).extend(dsv32_overlap(u, int(s)))
        if 1 in o["steps"] and 2 in o["steps"]:
            p1, p2 = o["steps"][1], o["steps"][2]
            for u1, u2 in [((p1["u0"], p1["u1"]), (p2["u0"], p2["u1"])),
                           *zip(p1["boot"], p2["boot"], strict=True)]:
                expo.extend(step_exponent(a, b) for a, b in zip(dsv32_agreement(u1), dsv32_agreement(u2),
                                                               strict=True))
    kap: dict[int, list[float]] = {}
    gamma: list[float] = []
    for row in sizes.values():
        pen = row.get("penalty") or {}
        for s, p in pen.get("steps", {}).items():
            kap.setdefault(int(s), []).extend([p["kappa"], *ci(p["boot"])] if p["boot"] else [p["kappa"]])
        e = row.get("engine_penalty")
        if e:
            for s, v in enumerate(e["kappa_step"][:2], start=1):
                kap.setdefault(s, []).append(v)
                if e.get("ci"):
                    kap[s].extend(e["ci"][s - 1])
            if "lk_exponent" in e:
                gamma += [e["lk_exponent"], *(e.get("lk_exponent_ci") or [])]

    def span(v: list[float]) -> list[float] | None:
        v = [x for x in v if math.isfinite(x)]
        return [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] if v else None

    return {"agreement": {s: span(v) for s, v in agree.items()},
            "overlap": {s: span(v) for s, v in ovl.items()},
            "agreement_step_exponent": span(expo),
            "kappa": {s: [float(min(v)), float(max(v))] for s, v in kap.items()},
            "lk_exponent": [float(min(gamma)), float(max(gamma))] if gamma else None}


def _fmt_ci(v: float, lohi: tuple[float, float] | None, fmt: str = ".2f") -> str:
    """A value with its CI; kappa at its bound means no penalty resolved (unbounded)."""
    big = KAPPA_MAX / 10
    val = "no penalty" if v >= big else format(v, fmt)
    if lohi is None:
        return val
    if lohi[0] >= big:
        return f"{val} (in every replicate)"
    hi = "∞" if lohi[1] >= big else format(lohi[1], fmt)
    return f"{val} [{lohi[0]:{fmt}}, {hi}]"


def trend(points: list[tuple[float, float, tuple[float, float]]]) -> str:
    """(params, value, CI) per measured size -> the change per 10x parameters from the smallest to
    the largest size, and whether every pair of CIs overlaps."""
    if len(points) < 2:
        return "one size: no trend"
    points = sorted(points)
    if any(ci_[1] >= KAPPA_MAX / 10 or v >= KAPPA_MAX / 10 for _, v, ci_ in points):
        return "CIs open above: no trend readable"
    (p0, v0, _), (p1, v1, _) = points[0], points[-1]
    stable = max(c[0] for _, _, c in points) <= min(c[1] for _, _, c in points)
    steps = np.diff([v for _, v, _ in points])
    monotonic = bool(np.all(steps >= 0) or np.all(steps <= 0))
    return (f"{(v1 - v0) / math.log10(p1 / p0):+.2f} per 10x params"
            + ("" if monotonic else " (smallest to largest; **not monotonic** in size)") + "; "
            + ("CIs overlap" if stable else "**not stable** (CIs disjoint)"))


def markdown(res: dict[str, Any]) -> str:
    lines = ["| parameter | " + " | ".join(
        f"{n} ({r['params'] / 1e6:.2f} M)" if r.get("params") else n for n, r in res["sizes"].items())
        + " | trend with size |", "|---|" + "---|" * (len(res["sizes"]) + 1)]
    names = list(res["sizes"])

    def row(label: str, cell, value=None) -> None:
        pts = []
        for n in names:
            r = res["sizes"][n]
            got = value(r) if value is not None and r.get("params") else None
            if got is not None:
                pts.append((float(r["params"]), got[0], got[1]))
        tr = trend(pts) if value is not None else ""
        lines.append(f"| {label} | " + " | ".join(cell(res["sizes"][n]) for n in names) + f" | {tr} |")

    for s in (1, 2):
        for key in ("u0", "u1"):
            def cell(r, s=s, key=key):
                o = r.get("overlap")
                if not o or s not in o["steps"]:
                    return "not measured"
                p = o["steps"][s]
                return _fmt_ci(p[key], ci([b[0 if key == "u0" else 1] for b in p["boot"]]))

            def val(r, s=s, key=key):
                o = r.get("overlap")
                if not o or s not in o["steps"]:
                    return None
                p = o["steps"][s]
                return p[key], ci([b[0 if key == "u0" else 1] for b in p["boot"]])
            row(f"overlap {key}, step {s}", cell, val)

        def agree_cell(r, s=s):
            o = r.get("overlap")
            if not o or s not in o["steps"]:
                return "not measured"
            p = o["steps"][s]
            a = dsv32_agreement((p["u0"], p["u1"]))
            return f"{min(a):.2f}-{max(a):.2f}"
        row(f"agreement c_{s} at L/K 4-64", agree_cell)

        def ovl_cell(r, s=s):
            o = r.get("overlap")
            if not o or s not in o["steps"]:
                return "not measured"
            p = o["steps"][s]
            v = dsv32_overlap((p["u0"], p["u1"]), s)
            return f"{min(v):.2f}-{max(v):.2f}"
        row(f"overlap at K 2,048, L 8-128 K, step {s}", ovl_cell)
    for s in (1, 2):
        def kap_cell(r, s=s):
            p = (r.get("penalty") or {}).get("steps", {}).get(s)
            if p is None:
                return "not measured" if not r.get("penalty") else "no overlap"
            return _fmt_ci(p["kappa"], ci(p["boot"]) if p["boot"] else None)

        def kap_val(r, s=s):
            p = (r.get("penalty") or {}).get("steps", {}).get(s)
            return None if p is None or not p["boot"] else (p["kappa"], ci(p["boot"]))
        row(f"kappa_{s} (campaign, T = 1)", kap_cell, kap_val)

        def eng_cell(r, s=s):
            e = r.get("engine_penalty")
            if not e or len(e["kappa_step"]) < s:
                return "not measured"
            return _fmt_ci(e["kappa_step"][s - 1], e["ci"][s - 1] if e.get("ci") else None)
        row(f"kappa_{s} (engine traces)", eng_cell)

    def gamma_cell(r):
        e = r.get("engine_penalty") or {}
        if "lk_exponent" not in e:
            return "not measured"
        return _fmt_ci(e["lk_exponent"], e.get("lk_exponent_ci"))
    row("gamma, kappa's L/K exponent (engine traces)", gamma_cell)
    return "\n".join(lines) + "\n"


def _without_replicates(x: Any) -> Any:
    """The result with each list of bootstrap replicates replaced by its 95 % CI (`ci95`: [lo, hi],
    or [[lo per field], [hi per field]] for replicates of several fields)."""
    if isinstance(x, dict):
        return {("ci95" if k == "boot" else k): (_ci95(v) if k == "boot" else _without_replicates(v))
                for k, v in x.items()}
    if isinstance(x, list):
        return [_without_replicates(v) for v in x]
    return x


def _ci95(reps: list) -> list:
    if not reps:
        return []
    if isinstance(reps[0], list | tuple):
        cols = [ci(list(col)) for col in zip(*reps, strict=True)]
        return [[c[0] for c in cols], [c[1] for c in cols]]
    return list(ci(reps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", type=Path, nargs="+", help="campaign folders, one per size")
    ap.add_argument("--engine-fit", action="append", default=[], metavar="SIZE=FILE")
    ap.add_argument("--boot", type=int, default=200, help="bootstrap refits per parameter")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="writes OUT.json and OUT.md")
    a = ap.parse_args()
    fits = {}
    for pair in a.engine_fit:
        size, sep, path = pair.partition("=")
        if not sep:
            ap.error(f"--engine-fit {pair!r}: expected SIZE=FILE")
        fits[size] = Path(path)
    res = build(a.dirs, fits, a.boot, a.seed)
    md = ("Overlap and penalty parameters per reference-model size: value [95 % CI] "
          "(benchmarks/transfer_table.py).\n\n" + markdown(res))
    imp = res["dsv32"]
    md += ("\nImplied for DeepSeek-V3.2 (K 2,048, L/K 4-64; every measured size, its CIs and the "
           "L/K range):\n\n")
    for s, v in sorted(imp["agreement"].items()):
        o = imp["overlap"][s]
        md += f"- agreement c_{s}: {v[0]:.2f}-{v[1]:.2f}; overlap {o[0]:.2f}-{o[1]:.2f}\n"
    if imp["agreement_step_exponent"]:
        x = imp["agreement_step_exponent"]
        md += f"- agreement step exponent (c_2 = c_1^(2^x)): {x[0]:.2f}-{x[1]:.2f}\n"
    for s, v in sorted(imp["kappa"].items()):
        hi = "unbounded (no penalty resolved)" if v[1] >= KAPPA_MAX / 10 else f"{v[1]:.3g}"
        md += f"- kappa_{s}: {v[0]:.2f} to {hi}\n"
    if imp.get("lk_exponent"):
        g = imp["lk_exponent"]
        md += f"- gamma (kappa x ((L/K)/16)^gamma): {g[0]:.2f}-{g[1]:.2f}\n"
    if a.out:
        atomic_write_json(a.out.with_suffix(".json"), _without_replicates(res))
        atomic_write_text(a.out.with_suffix(".md"), md)
    print(md)


if __name__ == "__main__":
    main()
