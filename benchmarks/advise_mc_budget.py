"""Where `mtpsim advise`'s Monte Carlo error comes from, and what 0.1 points at every quoted end
would cost: the shipped example (experiments/advise-deepseek-v3.2-b200.toml), one seed.

    python benchmarks/advise_mc_budget.py scaling --max-draws 2048 --seed 0 --write F.json
        advise's own stages (64, 128, ... draws) past the default cap: after each stage, the CPU
        and wall seconds so far, the load, and every quoted delta end's MC SE.
    python benchmarks/advise_mc_budget.py decompose --draws 256 --seed 0 --write F.json
        one run's simulated figures kept, then, without simulating again: (a) the discrepancy
        scores per draw, 64 (advise's) against 1,024 (is the inner, cheap integral the error?);
        (b) a second control variate that emulates each cell's simulated figures (log, quadratic
        in the draw's unit-cube point, cross-fitted per replicate) and applies the exact
        discrepancy adjustment at each draw's own scores, against advise's control (is a
        better emulator the way?); and (c) each draw's own simulation noise: three draws'
        parameters simulated at 8 simulation seeds each (what no emulator of the parameters
        can explain).
Each part prints its CPU seconds beside its wall seconds and the 1-minute load average.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from mtpsim.uncertainty import advise as A
from mtpsim.uncertainty.draws import Z_NAMES, run_draw
from mtpsim.uncertainty.rqmc import _density, _quantile, inner_scores, sobol_rows

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "experiments" / "advise-deepseek-v3.2-b200.toml"
PROB = 0.9


def clock() -> tuple[float, float, float]:
    return time.process_time(), time.perf_counter(), os.getloadavg()[0]


def since(c: tuple[float, float, float]) -> dict:
    return {"cpu_s": time.process_time() - c[0], "wall_s": time.perf_counter() - c[1],
            "load_1min": [c[2], os.getloadavg()[0]]}


def deployment(seed: int, draws: int | None = None, max_draws: int | None = None):
    from mtpsim.runs.advise import load

    return replace(load(EXAMPLE, draws=draws, max_draws=max_draws), seed=seed)


def scaling(seed: int, max_draws: int, write: Path | None) -> list[dict]:
    """advise's stages to `max_draws` (target 0.1: it goes on to the cap unless every end meets
    it), each quoted end's (lo, hi, MC SE, effective draws) after every stage."""
    log: list[dict] = []
    worst, c = A.worst_se, clock()

    def spy(rows):
        q = A.quoted(rows)
        log.append({**since(c), "draws": None,  # filled in from adv.stages below
                    "ends": {k: [iv.lo, iv.hi, iv.mc_se, iv.eff_draws] for k, iv in q.items()}})
        ses = [v[2] for v in log[-1]["ends"].values()]
        print(f"stage {len(log)}: {log[-1]['cpu_s']:.1f} s CPU, {log[-1]['wall_s']:.1f} s wall, load "
              f"{log[-1]['load_1min'][1]:.1f}; worst MC SE {max(ses):.3f}; ends <= 0.1: "
              f"{sum(s <= 0.1 for s in ses)} of {len(ses)}", flush=True)
        if write is not None:
            write.write_text(json.dumps(log))
        return worst(rows)

    A.worst_se = spy
    try:
        adv = A.advise(deployment(seed, max_draws=max_draws), 1)
    finally:
        A.worst_se = worst
    for n, rec in zip(adv.stages, log, strict=True):
        rec["draws"] = n
    if write is not None:
        write.write_text(json.dumps(log))
    return log


def capture(seed: int, draws: int) -> tuple[A.Advice, list, dict]:
    """One advise run at a fixed `draws`, its simulated figures per cell kept: (advice, per cell
    (raw figures, spread, first policy, k), the scores each draw was adjusted at)."""
    rec: list = []
    orig = A.adjust_many

    def spy(cols, z, spread, first, k, keys):
        rec.append((cols, z, spread, first, k))
        return orig(cols, z, spread, first, k, keys)

    A.adjust_many = spy
    try:
        adv = A.advise(deployment(seed, draws=draws), 1)
    finally:
        A.adjust_many = orig
    assert len(adv.stages) == 1 and len(rec) == len(adv.cells)  # --draws alone: one stage
    return adv, [(r[0], *r[2:]) for r in rec], rec[0][1]


def rebuilt(adv: A.Advice, raw: list, z: dict, cols_of=None) -> A.Advice:
    """An Advice on the same draws with other discrepancy scores `z` and (cols_of) other
    simulated figures: nothing simulated."""
    values = {}
    for cell, (cols, spread, first, k) in zip(adv.cells, raw, strict=True):
        values[cell] = A.adjust_many(cols if cols_of is None else cols_of(cell, cols), z, spread,
                                     first, k, A.MIX_METRICS)
    out = A.Advice(adv.dep, adv.cells, [], values, {}, adv.draws, replicate=adv.replicate)
    out._cache[("best",)] = adv.best_fresh()
    return out


def scores(adv: A.Advice, inner: int) -> dict:
    """Each draw's discrepancy scores as advise makes them (one stage), `inner` per draw."""
    reps = sorted(set(adv.replicate.tolist()))
    per = adv.n_draws // len(reps)
    z = np.concatenate([inner_scores(0, per, inner, adv.dep.seed * 7919 + 15485863 * (r + 1)) for r in reps])
    return {n: z[:, :, i] for i, n in enumerate(Z_NAMES)}


def deltas(adv: A.Advice, names: list[str]) -> dict[str, np.ndarray]:
    """Per quoted label, its per-draw values [draws, inner]."""
    out = {}
    for nm in names:
        kk, pol, what = nm.split(" ", 2)
        k = int(kk[2:])
        out[nm] = (adv.gain(k, pol) if what == "gain" else adv.gain_vs_no_mtp(k, pol)
                   if what == "vs no MTP" else adv.share_vs_fresh(k))
    return out


def _features(u: np.ndarray, top: list[int]) -> np.ndarray:
    c = u - 0.5
    parts = [np.ones((len(u), 1)), c, c * c - 1 / 12]
    parts.append(np.stack([c[:, a] * c[:, b] for i, a in enumerate(top) for b in top[i + 1:]], 1))
    return np.hstack(parts)


def _ridge(x: np.ndarray, y: np.ndarray, lam: float = 1e-6) -> np.ndarray:
    a = x.T @ x
    return np.linalg.solve(a + lam * np.trace(a) / len(a) * np.eye(len(a)), x.T @ y)


def emulate(u_train: np.ndarray, y: np.ndarray, targets: list[np.ndarray]) -> list[np.ndarray]:
    """A quadratic in u (the six coordinates that move y most, summed over its columns, also
    in products) fitted to y [n, T]; its predictions at each of `targets`."""
    b = _ridge(np.hstack([np.ones((len(u_train), 1)), u_train - 0.5]), y, 1e-10)
    top = [int(j) for j in np.argsort(-(np.abs(b[1:]) / (y.std(0) + 1e-12)).sum(1))[:6]]
    coef = _ridge(_features(u_train, top), y)
    return [_features(t, top) @ coef for t in targets]


class Structural:
    """advise's control-variate quantile (mtpsim.uncertainty.controlled) with another control:
    C_i(t), the share of draw i's emulated-then-adjusted values at most t; its mean from a
    sample of the cube of each replicate's own (the emulator fitted without that replicate)."""

    def __init__(self, x: np.ndarray, c_draws: np.ndarray, cube: list[np.ndarray], groups: np.ndarray):
        self.x, self.cd, self.groups = x, c_draws, groups
        self.labels = sorted(set(groups.tolist()))
        self.reps = [np.sort(x[groups == r], axis=None) for r in self.labels]
        self.creps = [np.sort(c_draws[groups == r], axis=None) for r in self.labels]
        self.cube, self.all = cube, np.sort(x, axis=None)

    def rep_cdfs(self, t, beta: float) -> np.ndarray:
        t = np.broadcast_to(np.asarray(t, float), (len(self.labels),))
        share = [[np.searchsorted(a, tt, "right") / len(a) for a, tt in zip(s, t, strict=True)]
                 for s in (self.reps, self.creps, self.cube)]
        g, c, e = map(np.array, share)
        return g - beta * (c - e)

    def beta(self, t: float) -> tuple[float, float]:
        gi, ci = (self.x <= t).mean(1), (self.cd <= t).mean(1)
        vc, vg = float(ci.var()), float(gi.var())
        if vc <= 1e-12 or vg <= 0:
            return 0.0, 0.0
        cov = float(((gi - gi.mean()) * (ci - ci.mean())).mean())
        return min(max(cov / vc, 0.0), 2.0), cov * cov / (vc * vg)

    def _roots(self, p: float, b: float, pooled: bool) -> np.ndarray:
        lo, hi = float(self.all[0]), float(self.all[-1])
        span = max(hi - lo, 1e-12)
        lo_t = np.full(1 if pooled else len(self.labels), lo - span)
        hi_t = lo_t + 3 * span
        for _ in range(36):
            mid = 0.5 * (lo_t + hi_t)
            f = self.rep_cdfs(mid[0], b).mean(keepdims=True) if pooled else self.rep_cdfs(mid, b)
            lo_t, hi_t = np.where(f < p, mid, lo_t), np.where(f < p, hi_t, mid)
        return 0.5 * (lo_t + hi_t)

    def se(self, p: float) -> tuple[float, float, float]:
        """(end, MC SE, R²) as advise's control-variate estimator computes them."""
        b, r2 = self.beta(_quantile(self.all, p))
        q, r = float(self._roots(p, b, True)[0]), len(self.labels)
        f = _density(self.all, q, len(self.x))
        by_cdf = float(self.rep_cdfs(q, b).std(ddof=1)) / math.sqrt(r) / f
        return q, max(by_cdf, float(self._roots(p, b, False).std(ddof=1)) / math.sqrt(r)), r2


def structural(adv: A.Advice, raw: list, z: dict, names: list[str]) -> dict[str, Structural]:
    """The emulated-figures control for every quoted delta (cross-fitted per replicate)."""
    u, groups = adv.units(), adv.replicate
    keys = [(ci, p, m) for ci, (cols, *_r) in enumerate(raw) for p, ms in cols.items() for m in ms]
    y = np.column_stack([np.log(np.maximum(np.asarray(raw[ci][0][p][m], float), 1e-12))
                         for ci, p, m in keys])
    col = {key: j for j, key in enumerate(keys)}
    em_draws = {nm: np.zeros_like(v) for nm, v in deltas(adv, names).items()}
    cube: dict[str, list] = {nm: [] for nm in names}
    for j, r in enumerate(sorted(set(groups.tolist()))):
        mine = groups == r
        ucube = sobol_rows(u.shape[1], 0, 512, 48611 * (j + 1) + 7)
        here, there = emulate(u[~mine], y[~mine], [u[mine], ucube])

        def cols_of(pred):
            return lambda cell, cols: {p: {m: np.exp(pred[:, col[(adv.cells.index(cell), p, m)]])
                                           for m in ms} for p, ms in cols.items()}

        zm = {n: v[mine] for n, v in z.items()}
        sub = rebuilt(adv, raw, zm, cols_of(here))
        zc = inner_scores(0, 512, 16, 31337 + 15485863 * (j + 1))
        other = rebuilt(adv, raw, {n: zc[:, :, i] for i, n in enumerate(Z_NAMES)}, cols_of(there))
        ed, ec = deltas(sub, names), deltas(other, names)
        for nm in names:
            em_draws[nm][mine] = ed[nm]
            cube[nm].append(np.sort(ec[nm], axis=None))
    xs = deltas(adv, names)
    return {nm: Structural(xs[nm], em_draws[nm], cube[nm], groups) for nm in names}


def seed_noise(seed: int, n_draws: int = 3, n_seeds: int = 8) -> dict:
    """Three draws' parameters, each simulated at 8 simulation seeds: the SD over seeds of
    three quoted deltas (the mix, as advise computes it, no discrepancy term)."""
    dep = deployment(seed)
    cells = [(k, c, conc) for k in dep.ks for c in dep.contexts for conc in dep.concurrency]
    exps = {c: A.cell_experiment(dep, *c) for c in cells}
    draws, _, _ = A.stage(exps[cells[0]], 16, 0, 1, dep.seed, 0)

    def mix(out, k, p):
        return sum(w * np.mean([out[(k, c, q)][p]["output_throughput"] for q in dep.concurrency])
                   for c, w in zip(dep.contexts, dep.weights, strict=True)) / sum(dep.weights)

    res = {}
    for di in range(n_draws):
        rows = []
        for s in range(n_seeds):
            d = replace(draws[di], seed=1000 + 17 * s)
            out = {c: run_draw(exps[c], d) for c in cells}
            rows.append([100 * (mix(out, 3, "fresh") / mix(out, 0, "no_mtp") - 1),
                         100 * (mix(out, 5, "share") / mix(out, 5, "fresh") - 1),
                         100 * (mix(out, 2, "share") / mix(out, 2, "fresh") - 1)])
        sd = np.array(rows).std(0, ddof=1)
        res[f"draw {di}"] = {"k=3 fresh vs no MTP": sd[0], "k=5 share vs fresh": sd[1],
                             "k=2 share vs fresh": sd[2]}
    return res


def decompose(seed: int, draws: int, write: Path | None) -> dict:
    c = clock()
    adv, raw, z = capture(seed, draws)
    out: dict = {"run": since(c), "draws": adv.n_draws}
    print(f"advise --draws {draws} (seed {seed}): {out['run']['cpu_s']:.1f} s CPU, "
          f"{out['run']['wall_s']:.1f} s wall, load {out['run']['load_1min'][1]:.1f}", flush=True)
    names = list(A.quoted(adv.rows(PROB)))
    c = clock()
    wide = rebuilt(adv, raw, scores(adv, 1024))
    rows64, rows1024 = A.quoted(adv.rows(PROB)), A.quoted(wide.rows(PROB))
    struct = structural(adv, raw, z, names)
    per = {}
    for nm in names:
        lo, hi = struct[nm].se((1 - PROB) / 2), struct[nm].se((1 + PROB) / 2)
        per[nm] = {"advise": [rows64[nm].lo, rows64[nm].hi, rows64[nm].mc_se, rows64[nm].control_r2],
                   "inner_1024": [rows1024[nm].lo, rows1024[nm].hi, rows1024[nm].mc_se],
                   "emulated_figures_control": [lo[0], hi[0], max(lo[1], hi[1]), min(lo[2], hi[2])]}
        a, b, s = per[nm]["advise"], per[nm]["inner_1024"], per[nm]["emulated_figures_control"]
        print(f"  {nm:<22} advise [{a[0]:7.2f}, {a[1]:7.2f}] SE {a[2]:.3f} R² {a[3]:.2f} | 1,024 scores "
              f"SE {b[2]:.3f} | emulated-figures control [{s[0]:7.2f}, {s[1]:7.2f}] SE {s[2]:.3f} "
              f"R² {s[3]:.2f}")
    out["ends"], out["estimators"] = per, since(c)
    print(f"estimators: {out['estimators']['cpu_s']:.1f} s CPU, {out['estimators']['wall_s']:.1f} s wall")
    c = clock()
    out["seed_noise_sd"] = seed_noise(seed)
    out["seed_noise"] = since(c)
    print(f"simulation-seed noise (SD over 8 seeds, points): {json.dumps(out['seed_noise_sd'])}; "
          f"{out['seed_noise']['cpu_s']:.1f} s CPU, {out['seed_noise']['wall_s']:.1f} s wall")
    if write is not None:
        write.write_text(json.dumps(out, default=float))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("scaling", "decompose"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--draws", type=int, default=256, help="decompose: the fixed draws")
    ap.add_argument("--max-draws", type=int, default=2048, help="scaling: the cap")
    ap.add_argument("--write", type=Path, default=None)
    a = ap.parse_args()
    if a.mode == "scaling":
        scaling(a.seed, a.max_draws, a.write)
    else:
        decompose(a.seed, a.draws, a.write)


if __name__ == "__main__":
    sys.exit(main())
