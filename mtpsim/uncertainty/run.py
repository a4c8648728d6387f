"""`--uncertainty N`: draw, run, condition, summarize (the library call behind the flag)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.spec import Experiment
from mtpsim.spec.roles import setup_overrides
from mtpsim.uncertainty import adaptive
from mtpsim.uncertainty import posterior as post
from mtpsim.uncertainty import sensitivity as sens
from mtpsim.uncertainty.domain import Domain, Extrapolation, domain_of, extrapolation
from mtpsim.uncertainty.draws import Z_NAMES, Draw, plan, run_draws
from mtpsim.uncertainty.priors import PARAMS
from mtpsim.uncertainty.summary import Spread, adjust, delta_values, summarize

if TYPE_CHECKING:
    from mtpsim.runs.executor import Pool

PRIOR = "prior"
ALL_ROWS = "all measured rows"


@dataclass(slots=True)
class UncertaintyRun:
    experiment: str
    exp: Experiment
    draws: list[Draw]
    raw: list[dict[str, dict[str, float]]]
    values: list[dict[str, dict[str, float]]]  # with the discrepancy term
    prior_n: int  # draws from the priors
    domain: Domain | None
    extrapolation: Extrapolation
    spread: Spread
    calibrated: bool  # a [calibration] file (bootstrap refits) rather than the roofline
    replicates: int
    noise: post.NoiseModel | None = None
    measured: dict[str, dict[str, Any]] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)  # name -> weights over draws
    conditioned: dict[str, list] = field(default_factory=dict)  # name -> values after the refit
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    jobs: int = 1  # jobs that ran at once (local workers, or the Ray cluster's CPUs)
    design: adaptive.Design | None = None  # the adaptive stages after the prior draws, if any
    calibration: Any = None  # the [calibration] file the draws used, if any
    _summaries: dict[tuple, dict[str, dict]] = field(default_factory=dict, repr=False)

    @property
    def policies(self) -> tuple[str, ...]:
        return self.exp.policies

    @property
    def prob(self) -> float:
        return self.exp.uncertainty.interval

    def summary(self, which: str = PRIOR) -> dict[str, dict]:
        """Intervals of every figure over the draws so far (`which`: the prior or a conditioned
        set). Kept per draw count and refit: the tables, the JSON and the sensitivity rows ask
        for the same summary a dozen times, and each costs a bootstrap of every interval."""
        key = (which, len(self.values), id(self.conditioned.get(which)), id(self.weights.get(which)))
        if key not in self._summaries:
            if which == PRIOR:  # the adaptive stages' draws are not the priors'
                self._summaries[key] = summarize(self.values[:self.prior_n], self.policies, None,
                                                 self.prob, self.rope)
            else:
                self._summaries[key] = summarize(self.conditioned[which], self.policies,
                                                 self.weights[which], self.prob, self.rope)
        return self._summaries[key]

    @property
    def rope(self):
        from mtpsim.uncertainty.intervals import rope_of

        return rope_of(self.exp.uncertainty)

    def best(self) -> str:
        """The most conditioned summary available."""
        return ALL_ROWS if ALL_ROWS in self.weights else PRIOR

    def decisive(self) -> tuple[str, str]:
        """(policy, metric) of the delta a user decides on: output throughput of the first
        policy against the base."""
        return (self.policies[1] if len(self.policies) > 1 else self.policies[0],
                "output_throughput")

    def sensitivity(self) -> list[sens.Sensitivity]:
        policy, metric = self.decisive()
        vals = self.values[:self.prior_n]
        if len(self.policies) > 1:
            y = delta_values(vals, policy, self.policies[0], metric)
        else:
            y = np.array([v[policy][metric] for v in vals])
        draws = self.draws[:self.prior_n]
        # at k = 0 nothing is drafted: the acceptance priors move no figure, and their rank
        # correlations with it would be chance
        inert = ({n for n, p in PARAMS.items()
                  if p.target.startswith(("acceptance.", "scale:draft_"))}
                 if self.exp.k == 0 else set())
        inputs = {n: np.array([d.unit[n] for d in draws]) for n in draws[0].unit if n not in inert}
        for z in Z_NAMES:
            col = np.array([d.z[z] for d in draws])
            if self._z_active(z):
                inputs[z] = col
        if self.replicates:
            inputs["calibration refit"] = np.array([d.replicate for d in draws], float)
        if draws and draws[0].shift is not None:
            inputs["workload shift"] = np.array([d.shift for d in draws], float)
        return sens.table(inputs, y)

    def _z_active(self, z: str) -> bool:
        s = self.spread
        return {"z_time": s.time, "z_time_policy": s.effect, "z_accept": s.accept,
                "z_accept_policy": s.effect}[z] > 0

    def noise_sensitivity(self, pcts: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 4.0)) -> list[dict[str, Any]]:
        """The conditioned decisive deltas and their verdicts were the PR rows' run-to-run timing
        noise `pct` % instead of the assumed one (the draws are re-weighted, not re-run)."""
        import dataclasses

        from mtpsim.uncertainty.intervals import verdict
        from mtpsim.uncertainty.summary import summarize

        if self.noise is None or ALL_ROWS not in self.weights or len(self.policies) < 2:
            return []  # nothing measured to condition on, or one policy: no delta to decide
        rows, fit_policy = self.measured, self.exp.calibration.fit_policy
        level = fit_policy if fit_policy in rows else next(iter(rows))
        z = [d.z["z_time"] for d in self.draws]
        corr = self.correction()
        policy, _ = self.decisive()
        out, shown = [], ("output_throughput", "median_tpot_ms")
        for pct in pcts:
            noise = dataclasses.replace(self.noise, timing_sd=pct / 100)
            values = post.refit_level(self.values, z, level, rows[level], noise)
            w = adaptive.weights(post.loglik(values, rows, noise, level), corr)
            s = summarize(values, self.policies, w, self.prob, self.rope, only=shown)["deltas"][policy]
            ses = [s[m].mc_se for m in shown if m in s and math.isfinite(s[m].mc_se)]
            # not held to the MC SE target (re-weighted, not re-drawn): a verdict clears 2 MC SEs
            out.append({"timing_noise_pct": pct, "effective_draws": post.ess(w),
                        "mc_se": max(ses) if ses else None,
                        **{m: {**s[m].to_json(), "verdict": verdict(s[m], policy, self.policies[0], m,
                                                                     self.exp.k, mc_margin=True)}
                           for m in shown if m in s}})
        return out

    def correction(self) -> np.ndarray:
        """Per draw, log prior density - log design density (zeros for prior draws alone)."""
        if self.design is None:
            return np.zeros(len(self.draws))
        return self.design.log_correction(latent(self.draws))

    def recommendation(self) -> tuple[str, float, list[str], str]:
        group, share, params = sens.measure_next(self.sensitivity())
        if self.exp.k == 0:  # mtpsim's real runs measure MTP only
            return group, share, params, (
                f"mtpsim calibrate {self.experiment}  # after measuring this deployment without "
                "MTP (vllm serve with no --speculative-config, vllm bench serve; mtpsim run-real "
                "runs MTP only) and writing the row as calibration.measured.no_mtp with "
                "calibration.fit_policy = no_mtp")
        return group, share, params, sens.command_for(group, self.experiment, self.calibrated)

    def sampler(self) -> dict[str, Any]:
        """How the draws were made: the prior draws, then each adaptive stage's size."""
        u = self.exp.uncertainty
        stages = [n for n, _ in self.design.stages] if self.design else [self.prior_n]
        return {"method": "adaptive importance sampling (defensive mixture, balance heuristic)"
                if len(stages) > 1 else "prior draws", "stages": stages,
                "mc_se_target": u.mc_se_target, "max_draws": u.max_draws}

    def shift_json(self) -> dict[str, Any] | None:
        """The workload-shift term the draws carried (None: not drawn)."""
        if not self.draws or self.draws[0].shift is None or self.calibration is None:
            return None
        s = self.calibration.shift
        return {"decode_sd": s.decode_sd, "prefill_sd": s.prefill_sd, "source": s.source,
                "note": s.note, "kinds": s.kinds}

    def to_json(self) -> dict[str, Any]:
        def summ(s: dict) -> dict:
            return {kind: {p: {m: iv.to_json() for m, iv in d.items()} for p, d in s[kind].items()}
                    for kind in ("metrics", "deltas")}

        return {
            "experiment": self.experiment, "draws_n": len(self.draws), "prior_draws": self.prior_n,
            "interval": self.prob, "wall_s": self.wall_s, "jobs": self.jobs,
            "calibrated_range": None if self.domain is None else {
                "source": self.domain.source, "axes": self.domain.axes,
                "machine": self.domain.machine},
            "extrapolation": {"distance": self.extrapolation.distance,
                              "axes": self.extrapolation.axes,
                              "machine_differs": self.extrapolation.machine_differs,
                              "notes": list(self.extrapolation.notes)},
            "discrepancy_sd": {"time": self.spread.time, "accept": self.spread.accept,
                               "effect": self.spread.effect,
                               "effect_accept": self.spread.effect_accept},
            "workload_shift": self.shift_json(),
            "noise_model": None if self.noise is None else self.noise.describe(),
            "summary": {name: summ(self.summary(name)) for name in [PRIOR, *self.weights]},
            "effective_draws": {name: post.ess(w) for name, w in self.weights.items()},
            "sampler": self.sampler(),
            "sensitivity": [{"param": s.param, "rho": s.rho, "share": s.share}
                            for s in self.sensitivity()],
            "measure_next": dict(zip(("measurement", "share", "params", "command"),
                                     self.recommendation(), strict=True)),
            "notes": self.notes,
            "noise_sensitivity": self.noise_sensitivity(),
            "draws": [{"index": d.index, "seed": d.seed, "overrides": d.overrides(),
                       "z": d.z, "replicate": d.replicate, "shift_score": d.shift,
                       "simulated": self.raw[i], "with_discrepancy": self.values[i],
                       "conditioned": {n: v[i] for n, v in self.conditioned.items()},
                       "weights": {n: float(w[i]) for n, w in self.weights.items()}}
                      for i, d in enumerate(self.draws)],
        }


def propagate(experiment: str, overrides: Sequence[str], n: int, jobs: int | Pool = 1,
              calibration: Any = None, condition: bool = True,
              progress: Callable[[int, int], None] | None = None) -> UncertaintyRun:
    """Draw `n` parameter sets, simulate every policy on each, condition on the measured rows
    where the experiment holds them for its own setup."""
    from mtpsim.models.build import read_experiment_calibration
    from mtpsim.runs.executor import as_pool
    from mtpsim.spec import load_experiment
    from mtpsim.uncertainty.limits import check_draws, check_simulations

    check_draws(n, "--uncertainty")
    t0 = time.perf_counter()
    exp = load_experiment(experiment, list(overrides))
    check_simulations(n, 1, len(exp.policies), "--uncertainty", "point")
    cal = calibration
    if cal is None and exp.calibration.file:
        cal = read_experiment_calibration(exp)
    file_exp = load_experiment(experiment) if cal is None and exp.calibration.measured else None
    dom = domain_of(exp, cal, file_exp)
    ext = extrapolation(exp, dom)
    spread = Spread.of(ext, exp.uncertainty, calibrated=dom is not None,
                       fitted_acceptance=cal is not None)
    reps = len(cal.bootstrap) if cal is not None else 0
    run = UncertaintyRun(experiment, exp, [], [], [], n, dom, ext, spread, cal is not None, reps,
                         jobs=min(as_pool(jobs).size, max(1, n)), calibration=cal)
    if cal is not None and not reps:
        run.notes.append(f"{cal.path} holds no bootstrap refits: the intervals carry the "
                         "discrepancy term and the simulator's sampling only (refit with "
                         "--save-calibration F --bootstrap 32)")
    if cal is not None:
        run.notes.append(f"workload shift: {cal.shift.describe()}")
    _run_stage(run, plan(exp, n, replicates=reps, shift=cal is not None and cal.shift.active), cal,
               jobs, progress, n)
    rows = _rows(exp)
    changed = setup_overrides(list(overrides))
    if rows and cal is None:
        if changed:
            run.notes.append("measured rows not used: --set changed the measured setup ("
                             + ", ".join(changed) + ")")
        elif ext.flagged:
            run.notes.append("measured rows not used: this setup differs from theirs ("
                             + "; ".join(ext.notes) + ")")
        elif condition:
            _condition(run, rows)
            _adapt(run, cal, jobs, progress)
            if ALL_ROWS in run.weights and (e := post.ess(run.weights[ALL_ROWS])) < 10:
                run.notes.append(f"the conditioned intervals rest on {e:.1f} effective draws: "
                                 "raise --uncertainty for steadier figures")
    run.wall_s = time.perf_counter() - t0
    return run


def _rows(exp: Experiment) -> dict[str, dict[str, Any]]:
    return {p: dict(r) for p, r in exp.calibration.measured.items() if p in exp.policies}


def _run_stage(run: UncertaintyRun, draws: list[Draw], cal: Any, jobs: int | Pool,
               progress: Callable[[int, int], None] | None, total: int) -> None:
    got: dict[int, dict] = {}
    for i, res in run_draws(run.exp, draws, cal, jobs):
        got[i] = res
        if progress is not None:
            progress(len(run.draws) + len(got), total)
    first = run.policies[0]
    for d in draws:
        run.draws.append(d)
        run.raw.append(got[d.index])
        run.values.append(adjust(got[d.index], d, run.spread, first, run.exp.k))


def _condition(run: UncertaintyRun, rows: dict[str, dict[str, Any]]) -> None:
    run.measured = rows
    run.noise = post.noise_model(rows, run.exp.uncertainty)
    _weigh(run)


def _weigh(run: UncertaintyRun) -> None:
    """Weights of every draw under all rows and each row alone (design-corrected)."""
    rows = run.measured
    sets = {ALL_ROWS: rows, **{f"{p} row": {p: r} for p, r in rows.items()}}
    z = [d.z["z_time"] for d in run.draws]
    corr = run.correction()
    for name, subset in sets.items():
        level = _level(run, subset)
        if not isinstance(subset[level].get("output_throughput"), int | float):
            continue
        values = post.refit_level(run.values, z, level, subset[level], run.noise)
        run.conditioned[name] = values
        run.weights[name] = adaptive.weights(post.loglik(values, subset, run.noise, level), corr)


def latent(draws: Sequence[Draw]) -> np.ndarray:
    """[draws, d] normal scores of the draws' unit-cube points (N(0, I) under the priors)."""
    from scipy.special import ndtri

    u = np.array([list(d.unit.values()) for d in draws], float).reshape(len(draws), -1)
    z = np.array([[d.z[n] for n in Z_NAMES] for d in draws], float)
    return np.concatenate([ndtri(u), z], axis=1)


def _level(run: UncertaintyRun, rows: dict[str, dict[str, Any]]) -> str:
    fit_policy = run.exp.calibration.fit_policy
    return fit_policy if fit_policy in rows else next(iter(rows))


def _adapt(run: UncertaintyRun, cal: Any, jobs: int | Pool,
           progress: Callable[[int, int], None] | None) -> None:
    """Adaptive stages (mtpsim.uncertainty.adaptive) until the conditioned, tabled timing-delta
    ends' MC SE meets `uncertainty.mc_se_target` or the draws reach `uncertainty.max_draws`."""
    from scipy.special import ndtr

    from mtpsim.uncertainty.draws import METRICS
    from mtpsim.uncertainty.intervals import ACCEPTANCE
    from mtpsim.uncertainty.summary import summarize

    u, rows = run.exp.uncertainty, run.measured
    if (ALL_ROWS not in run.weights or len(run.policies) < 2 or u.max_draws <= run.prior_n
            or run.prior_n < adaptive.MIN_PILOT):
        return
    level = _level(run, rows)
    shown = tuple(m for m in METRICS if m not in ACCEPTANCE)

    def conditioned(start: int) -> list:
        z = [d.z["z_time"] for d in run.draws[start:]]
        return post.refit_level(run.values[start:], z, level, rows[level], run.noise)

    def draw(points: np.ndarray, stage: int) -> tuple[np.ndarray, np.ndarray]:
        n = len(run.draws)
        unit = np.clip(ndtr(points), 1e-6, 1 - 1e-6)
        draws = [dataclasses.replace(d, index=n + d.index)
                 for d in plan(run.exp, len(points), seed_offset=stage, unit=unit)]
        _run_stage(run, draws, cal, jobs, progress, n + len(points))
        return latent(draws), post.loglik(conditioned(n), rows, run.noise, level)

    def worst_se(w: np.ndarray) -> float:
        s = summarize(conditioned(0), run.policies, w, run.prob, run.rope, only=shown)["deltas"]
        return max((iv.mc_se for d in s.values() for iv in d.values() if math.isfinite(iv.mc_se)),
                   default=math.nan)

    ll = post.loglik(conditioned(0), rows, run.noise, level)
    run.design, _, worst = adaptive.adapt(latent(run.draws), ll, draw, worst_se, u.mc_se_target,
                                          u.max_draws, run.exp.seed, run.prior_n)
    _weigh(run)
    if math.isfinite(worst) and worst > u.mc_se_target:
        run.notes.append(f"the conditioned timing-delta ends have MC SE {worst:.2f} points after "
                         f"{len(run.draws)} draws (uncertainty.max_draws): above the "
                         f"{u.mc_se_target} target")
