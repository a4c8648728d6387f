"""From draws to answers: the discrepancy term, weighted medians and intervals, policy deltas
with P(delta > 0) and P(delta > +region). Their verdicts against the region of practical
equivalence (mtpsim.uncertainty.intervals): "<policy> better" / "<policy> worse", "no practical
difference", "cannot tell", or "same program at k=1" for policies that do not differ at the run's
k."""

from __future__ import annotations

import math

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.uncertainty.domain import Extrapolation
from mtpsim.uncertainty.draws import BENCH_METRICS, LATENCIES, THROUGHPUTS, Draw
from mtpsim.uncertainty.intervals import ACCEPTANCE, EXPECTED_AL, Interval, region
from mtpsim.verdict import Rope

TIMING = (*THROUGHPUTS, *LATENCIES)  # scale with the timing discrepancy (throughputs inversely)
PER_TOKEN = tuple(k for k in LATENCIES if "_tpot_" in k)  # follow tokens per step as well
ACCEPT_DISCREPANCY_PCT = 1.0  # model discrepancy of acceptance length - 1 inside the range


@dataclass(frozen=True, slots=True)
class Spread:
    """Model-discrepancy SDs applied to every draw's simulated figures: a level for timings and
    one for acceptance length - 1 (log scale, shared by all policies), and for each policy's
    effect against the first: a log-SD on its size (ratio of timings, acceptance-length
    difference) and an additive SD on its acceptance-length change, as a fraction of the first
    policy's acceptance length - 1 (so a change the simulator puts near zero widens too)."""

    time: float
    accept: float
    effect: float
    effect_accept: float = 0.0

    @classmethod
    def of(cls, ext: Extrapolation, u, calibrated: bool, fitted_acceptance: bool = False) -> Spread:
        """`u`: the spec's UncertaintySpec. Nothing calibrated: no discrepancy term (the
        priors alone carry the uncertainty). `fitted_acceptance`: the acceptance model was fitted
        to traces (a `[calibration] file`), whose ln-context trend is extrapolated beyond the
        traced contexts, so context distance counts at its own, steeper rates, and whose fitted
        penalty gets the additive effect term."""
        if not calibrated:
            return cls(0.0, 0.0, 0.0)
        d = ext.distance
        ctx = ext.context if fitted_acceptance else 0.0
        # a probe-rescaled calibration carries the rescale's measured residual, moved or not
        machine = (u.probe_residual_pct if ext.probe_rescaled
                   else u.machine_pct if ext.machine_differs else 0.0)
        time = math.sqrt(u.discrepancy_pct ** 2 + (u.extrapolation_pct * d) ** 2 + machine ** 2)
        acc = math.hypot(ACCEPT_DISCREPANCY_PCT, u.acceptance_extrapolation_pct * (d - ctx)
                         + u.context_acceptance_extrapolation_pct * ctx)
        # an acceptance model fitted to traces carries its penalty as fitted; a roofline's comes
        # from the priors, whose draws already span the effect: no additive term there
        eff_acc = (u.effect_acceptance_extrapolation_pct * (d - ctx)
                   + u.context_effect_acceptance_extrapolation_pct * ctx) if fitted_acceptance else 0.0
        return cls(time / 100, acc / 100, u.effect_extrapolation_pct * d / 100, eff_acc / 100)


def adjust(raw: dict[str, dict[str, float]], draw: Draw, spread: Spread,
           first: str, steps: int | None = None) -> dict[str, dict[str, float]]:
    """Apply the draw's discrepancy scores. Timings of every policy scale by one factor and
    acceptance length - 1 by another; a policy's effect against `first` (the ratio of its
    figure to first's, or the acceptance-length difference) is raised to / scaled by a third,
    and its acceptance-length change shifted by an additive term, so policies the simulator finds
    identical stay identical only inside the range. The additive term scales with the share of the
    `steps` (k) draft steps at which the two policies select differently (none at k = 1 for `share`),
    from their declared traits. A policy's throughput and TPOT then follow its acceptance length
    (tokens per step): x AL_adjusted / AL_simulated and its inverse."""
    f = math.exp(spread.time * draw.z["z_time"])
    g = math.exp(spread.accept * draw.z["z_accept"])
    e_t = math.exp(spread.effect * draw.z["z_time_policy"])
    e_a = math.exp(spread.effect * draw.z["z_accept_policy"])
    base = raw[first]
    al = "spec_decode_acceptance_length"
    out = {}
    for policy, m in raw.items():
        accepted = {}
        for key in ACCEPTANCE:
            if key not in m:
                continue
            v, b = m[key], base[key]
            if policy != first:
                active = 1.0 if steps is None else _differs(policy, first, steps)
                v = (b + (v - b) * e_a
                     + (b - 1) * spread.effect_accept * active * draw.z["z_accept_policy"])
            accepted[key] = max(1.0, 1 + (v - 1) * g)
        # adjusted / simulated tokens per step
        tokens = accepted[al] / m[al] if al in accepted and m[al] > 0 else 1.0
        adj = {}
        for k, v in m.items():
            b = base[k]
            if k in TIMING:
                if b > 0:  # (a figure can be 0: TPOT of one-token outputs)
                    v = b * (v / b) ** (1.0 if policy == first else e_t)
                v = v / f if k in THROUGHPUTS else v * f
                adj[k] = v * tokens if k in THROUGHPUTS else (v / tokens if k in PER_TOKEN else v)
            elif k in accepted:
                adj[k] = accepted[k]
            else:
                adj[k] = v
        out[policy] = adj
    return out


def adjust_many(raw: dict[str, dict[str, np.ndarray]], z: dict[str, np.ndarray], spread: Spread,
                first: str, steps: int | None, keys: tuple[str, ...]) -> dict[str, dict[str, np.ndarray]]:
    """`adjust` for many draws at many discrepancy scores at once (conditional Monte Carlo,
    mtpsim.uncertainty.rqmc): `raw` policy -> metric -> [n] simulated figures, `z` Z_NAMES ->
    [n, M] scores; policy -> metric (of `keys`) -> [n, M], element (i, j) what `adjust` gives for
    draw i at scores j (tests/test_rqmc_quantile_se_matches_its_spread_on_a_known_distribution.py
    pins the two together)."""
    f = np.exp(spread.time * z["z_time"])
    g = np.exp(spread.accept * z["z_accept"])
    e_t = np.exp(spread.effect * z["z_time_policy"])
    e_a = np.exp(spread.effect * z["z_accept_policy"])
    al = "spec_decode_acceptance_length"
    base = {k: np.asarray(v, float)[:, None] for k, v in raw[first].items()}
    out = {}
    for policy, fig in raw.items():
        m = {k: np.asarray(v, float)[:, None] for k, v in fig.items()}
        v, b = m[al], base[al]
        if policy != first:
            active = 1.0 if steps is None else _differs(policy, first, steps)
            v = b + (v - b) * e_a + (b - 1) * spread.effect_accept * active * z["z_accept_policy"]
        accepted = np.maximum(1.0, 1 + (v - 1) * g)
        tokens = np.where(m[al] > 0, accepted / np.where(m[al] > 0, m[al], 1.0), 1.0)
        adj = {}
        for k in keys:
            v, b = m[k], base[k]
            if k in TIMING:
                if policy != first:
                    v = np.where(b > 0, b * (v / np.where(b > 0, b, 1.0)) ** e_t, v)
                v = v / f if k in THROUGHPUTS else v * f
                adj[k] = v * tokens if k in THROUGHPUTS else (v / tokens if k in PER_TOKEN else v)
            elif k == al:
                adj[k] = accepted
            else:
                adj[k] = np.broadcast_to(v, f.shape).copy()
        out[policy] = adj
    return out


def _differs(policy: str, first: str, k: int) -> float:
    from mtpsim.policies import traits

    return max(traits(policy).reused_fraction(k), traits(first).reused_fraction(k))


def wquantile(x: np.ndarray, w: np.ndarray | None, q: float) -> float:
    """Weighted quantile (midpoint rule; plain quantile without weights)."""
    x = np.asarray(x, float)
    if w is None:
        return float(np.quantile(x, q))
    order = np.argsort(x)
    xs, ws = x[order], np.asarray(w, float)[order]
    c = (np.cumsum(ws) - 0.5 * ws) / ws.sum()
    return float(np.interp(q, c, xs))


def interval(x: np.ndarray, w: np.ndarray | None, prob: float, delta: bool = False,
             half: float = math.nan, groups: np.ndarray | None = None,
             controls: np.ndarray | None = None, seed: int = 0) -> Interval:
    """Median and central `prob` interval of x (weights w); for a delta also P(> 0), P(> +half)
    and the ends' Monte Carlo SE. `groups`: x is [draws, inner] from randomized QMC replicates
    (groups[i] draw i's replicate, no weights), whose SE and effective draws come from the
    replicates (mtpsim.uncertainty.rqmc). `controls` [draws, d]: the draws' unit-cube points;
    a delta's quantiles then use the cross-fitted control variate, SE from the replicates of
    that estimator (mtpsim.uncertainty.controlled), where there are draws enough to fit it."""
    a = (1 - prob) / 2
    p = above = math.nan
    if not np.all(np.isfinite(np.asarray(x, float))):  # a draw without this figure: none at all
        return Interval(math.nan, math.nan, math.nan, math.nan, math.nan, half, math.nan)
    if groups is not None and delta and controls is not None:
        from mtpsim.uncertainty.controlled import controlled_interval

        iv = controlled_interval(x, groups, controls, prob, half, seed)
        if iv is not None:
            return iv
    if groups is not None:
        from mtpsim.uncertainty.rqmc import Pooled, interval_se

        pool = Pooled(x, groups)
        se, eff = interval_se(pool, None, prob) if delta else (math.nan, math.nan)
        if delta:
            p = pool.above(0.0)
            above = pool.above(half) if not math.isnan(half) else math.nan
        return Interval(pool.quantile(0.5), pool.quantile(a), pool.quantile(1 - a), p, above, half,
                        se, eff)
    x = np.asarray(x, float).ravel()
    if delta:
        ww = np.ones(len(x)) if w is None else np.asarray(w, float)
        p = float(ww[np.asarray(x) > 0].sum() / ww.sum())
        if not math.isnan(half):
            above = float(ww[np.asarray(x) > half].sum() / ww.sum())
    se = mc_se(np.asarray(x, float), w, prob) if delta else math.nan
    return Interval(wquantile(x, w, 0.5), wquantile(x, w, a), wquantile(x, w, 1 - a), p, above, half, se)


MC_REPS = 200
MC_SE_TARGET = 0.1  # points (% for timings): an interval end quoted to 0.1 must be steady to it


def mc_se(x: np.ndarray, w: np.ndarray | None, prob: float, reps: int = MC_REPS) -> float:
    """Monte Carlo SE of the interval's ends, the larger end: the larger of two estimates, each
    of which fails in its own way (a bootstrap over the draws with their weights misses what a
    few heavy weights hide; the delta method of importance sampling, mtpsim.uncertainty.adaptive,
    rests on a kernel density at the end). Seeded: the same draws, the same SE."""
    from mtpsim.uncertainty.adaptive import quantile_se

    a = (1 - prob) / 2
    ww = np.ones(len(x)) if w is None else w  # one quantile rule, weighted or not
    delta = max(quantile_se(x, w, p, wquantile(x, ww, p)) for p in (a, 1 - a))
    boot = bootstrap_se(x, w, prob, reps)
    return max(boot, delta) if not math.isnan(delta) else boot


def bootstrap_se(x: np.ndarray, w: np.ndarray | None, prob: float, reps: int = MC_REPS) -> float:
    """The SD over `reps` bootstrap resamples of the draws (with their weights) of each interval
    end, the larger of the two."""
    n = len(x)
    if n < 2:
        return math.nan
    a = (1 - prob) / 2
    rng = np.random.default_rng(12345)
    idx = rng.integers(0, n, (reps, n))
    ww = np.ones(n) if w is None else np.asarray(w, float)
    xs, wsel = x[idx], ww[idx]
    order = np.argsort(xs, axis=1)
    xs, wsel = np.take_along_axis(xs, order, 1), np.take_along_axis(wsel, order, 1)
    tot = wsel.sum(1, keepdims=True)
    ok = tot[:, 0] > 0
    c = (np.cumsum(wsel, 1) - 0.5 * wsel) / np.where(tot > 0, tot, 1.0)
    ends = np.stack([interp_rows(q, c[ok], xs[ok]) for q in (a, 1 - a)], 1)
    return float(ends.std(0, ddof=1).max()) if len(ends) > 1 else math.nan


def interp_rows(q: float, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """`np.interp(q, xp[i], fp[i])` for every row i at once, with numpy's arithmetic and edge
    rules (rows of `xp` nondecreasing, at least 2 columns): one array pass instead of a Python
    call per bootstrap resample, which made the Monte Carlo SEs most of a summary's time."""
    n = xp.shape[1]
    j = (xp <= q).sum(1) - 1  # the last index with xp <= q (numpy's search), -1 below xp[0]
    r, jj = np.arange(len(xp)), np.clip(j, 0, n - 2)
    x0, x1, y0, y1 = xp[r, jj], xp[r, jj + 1], fp[r, jj], fp[r, jj + 1]
    with np.errstate(all="ignore"):
        slope = (y1 - y0) / (x1 - x0)
        out = slope * (q - x0) + y0
        other = slope * (q - x1) + y1  # numpy's retry from the right end when the left gives NaN
    other = np.where(np.isnan(other) & (y0 == y1), y0, other)
    out = np.where(np.isnan(out), other, out)
    out = np.where(x0 == q, y0, out)
    out = np.where(j >= n - 1, fp[:, -1], out)
    return np.where(j < 0, fp[:, 0], out)


def delta_values(values: list[dict[str, dict[str, float]]], policy: str, base: str,
                 metric: str) -> np.ndarray:
    """Per draw: policy vs base, in % for timings, absolute for acceptance length."""
    if metric in ACCEPTANCE:
        return np.array([v[policy][metric] - v[base][metric] for v in values])
    # a relative change against a zero base (no ITL in a one-token answer) has no value: NaN
    return np.array([100 * (v[policy][metric] / v[base][metric] - 1) if v[base][metric]
                     else math.nan for v in values])


def summarize(values: list[dict[str, dict[str, float]]], policies: tuple[str, ...],
              w: np.ndarray | None, prob: float, rope: Rope | None = None,
              only: tuple[str, ...] | None = None) -> dict[str, dict]:
    """{"metrics": policy -> metric -> Interval, "deltas": policy -> metric -> Interval};
    `only`: just these metrics (a caller that reads two need not bootstrap forty)."""
    keys = tuple(m for m in BENCH_METRICS if values and all(m in v[p] for v in values
                                                              for p in policies))
    keys += ((EXPECTED_AL,) if values and all(
        EXPECTED_AL in v[p] for v in values for p in policies) else ())
    if only is not None:
        keys = tuple(m for m in keys if m in only)
    metrics = {p: {m: interval(np.array([v[p][m] for v in values]), w, prob) for m in keys}
               for p in policies}
    base = policies[0]
    deltas = {p: {m: interval(delta_values(values, p, base, m), w, prob, delta=True,
                              half=region(m, rope))
                  for m in keys} for p in policies[1:]}
    return {"metrics": metrics, "deltas": deltas}
