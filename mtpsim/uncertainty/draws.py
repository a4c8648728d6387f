"""Quasi-random parameter draws and running every policy on each.

A draw is a set of values for the drawn parameters (mtpsim.uncertainty.priors), applied to the
validated spec as `--set section.key=value` would be (`overrides`), plus phase scales for costs
the spec has no field for, a seed (so the simulator's own sampling noise is part of the spread),
an optional bootstrap refit of a `[calibration] file`, normal scores of the model-discrepancy
term, and, with a `[calibration] file`, the normal score of its workload-shift factor: every step
cost of every policy is multiplied by exp(SD x score), the SD the file's (decode-only and prefill
steps apart; mtpsim.calibration.shift), so levels widen and deltas barely move. Within a draw
every policy sees the same requests and uniforms (the simulator's common random numbers), so a
policy delta is never sampling noise between policies.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.spec import Experiment
from mtpsim.uncertainty.intervals import EXPECTED_AL
from mtpsim.uncertainty.priors import PARAMS, Prior, resolved

if TYPE_CHECKING:
    from mtpsim.runs.executor import Pool

# what `vllm bench serve` prints (its --save-result key names), each drawn and summarised
THROUGHPUTS = ("request_throughput", "output_throughput", "total_token_throughput")
LATENCIES = tuple(f"{stat}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el")
                  for stat in ("mean", "median", "p90", "p99"))
BENCH_METRICS = (*THROUGHPUTS, *LATENCIES, "spec_decode_acceptance_length")
# the default table (`--metrics` chooses others)
METRICS = ("output_throughput", "median_tpot_ms", "median_ttft_ms", "p90_ttft_ms",
           "spec_decode_acceptance_length")
# discrepancy scores: timing level (all policies), timing per policy, acceptance level, per policy
Z_NAMES = ("z_time", "z_time_policy", "z_accept", "z_accept_policy")


@dataclass(frozen=True, slots=True)
class Draw:
    index: int
    seed: int
    values: dict[str, float]  # parameter -> value
    unit: dict[str, float]  # parameter -> its quantile in (0, 1) (for sensitivity)
    z: dict[str, float]  # Z_NAMES -> standard normal score
    replicate: int | None = None  # index into the calibration's bootstrap refits
    shift: float | None = None  # normal score of the workload-shift factor (None: not drawn)

    def overrides(self) -> list[str]:
        """The draw as `--set` texts (phase scales have no spec field: shown as scale:PHASE)."""
        return [f"{PARAMS[n].target}={v:.6g}" for n, v in self.values.items()]

    def overrides_for_set(self) -> list[str]:
        """The spec-field part, exact (repr), for `mtpsim simulate --set ...`."""
        return [f"{PARAMS[n].target}={v!r}" for n, v in self.values.items()
                if not PARAMS[n].target.startswith("scale:")]


def drawn_priors(exp: Experiment) -> dict[str, Prior]:
    """The parameters this experiment draws: every non-fixed prior, except those a
    `[calibration] file` replaces (its bootstrap refits carry their uncertainty) and those that
    act only under a setting the experiment does not make (`Param.only_with`)."""
    from mtpsim.uncertainty.priors import class_prior, parse_prior

    priors = resolved(exp.uncertainty.priors)
    if "acceptance_scale" not in exp.uncertainty.priors:
        priors["acceptance_scale"] = parse_prior(
            class_prior(exp.acceptance.dataset_class, exp.workload.temperature),
            PARAMS["acceptance_scale"])

    def acts(name: str) -> bool:
        cond = PARAMS[name].only_with
        if cond is None:
            return True
        section, key = cond[0].split(".")
        return getattr(getattr(exp, section), key) in cond[1]

    return {n: p for n, p in priors.items() if p.kind != "fixed" and acts(n)
            and not (exp.calibration.file and PARAMS[n].calibrated_by_file)}


def sobol(n: int, d: int, seed: int) -> np.ndarray:
    """[n, d] scrambled Sobol points in (0, 1)."""
    from scipy.stats import qmc

    with warnings.catch_warnings():  # n need not be a power of two for our use
        warnings.simplefilter("ignore", UserWarning)
        u = qmc.Sobol(d, scramble=True, seed=seed).random(n)
    return np.clip(u, 1e-6, 1 - 1e-6)


def plan(exp: Experiment, n: int, replicates: int = 0, seed_offset: int = 0,
         unit: np.ndarray | None = None, shift: bool = False) -> list[Draw]:
    """`n` draws from the priors (or from the given unit-cube points `unit`); `shift`: each
    also draws the workload-shift score (one more Sobol coordinate, the last)."""
    from scipy.special import ndtri

    priors = drawn_priors(exp)
    names = list(priors)
    d = len(names) + len(Z_NAMES)
    u = sobol(n, d + int(shift), exp.seed + 7919 * seed_offset) if unit is None else unit
    shift = shift and u.shape[1] > d
    rng = np.random.default_rng(exp.seed + 104729 + seed_offset)
    reps = rng.permutation(np.arange(n) % replicates) if replicates else None
    draws = []
    for i in range(n):
        values = {}
        for j, name in enumerate(names):
            p = PARAMS[name]
            values[name] = float(min(max(priors[name].ppf(float(u[i, j])), p.lo), p.hi))
        z = {zn: float(ndtri(u[i, len(names) + j])) for j, zn in enumerate(Z_NAMES)}
        draws.append(Draw(i, exp.seed + seed_offset * 100003 + i, values,
                          {nm: float(u[i, j]) for j, nm in enumerate(names)}, z,
                          None if reps is None else int(reps[i]),
                          float(ndtri(u[i, d])) if shift else None))
    return draws


def with_draw(exp: Experiment, draw: Draw) -> Experiment:
    """The spec with the draw's field values and seed (each value checked by its field)."""
    from mtpsim.errors import SpecError
    from mtpsim.spec.fields import coerce

    by_section: dict[str, dict[str, Any]] = {}
    for name, v in draw.values.items():
        target = PARAMS[name].target
        if target.startswith("scale:"):
            continue
        section, key = target.split(".")
        by_section.setdefault(section, {})[key] = v
    changes = {}
    for section, kv in by_section.items():
        old = getattr(exp, section)
        fields = {f.name: f for f in dataclasses.fields(old)}
        for key, v in kv.items():
            value = coerce(v, type(getattr(old, key)))
            check = fields[key].metadata.get("check")
            if check is not None and (msg := check(value)) is not None:
                raise SpecError("--uncertainty", f"{section}.{key}", f"expected {msg}, got {v!r}")
            kv[key] = value
        changes[section] = dataclasses.replace(old, **kv)
    return dataclasses.replace(exp, **changes, seed=draw.seed)


def scales(draw: Draw) -> dict[str, float]:
    return {PARAMS[n].target.split(":", 1)[1]: v for n, v in draw.values.items()
            if PARAMS[n].target.startswith("scale:")}


class ScaledCost:
    """A step-cost model with some phases multiplied (the `scale:PHASE` parameters)."""

    def __init__(self, base: Any, factors: dict[str, float]) -> None:
        self.base, self.factors = base, factors

    def step(self, shape: Any) -> dict[str, np.ndarray]:
        out = self.base.step(shape)
        return {p: (v * self.factors[p] if p in self.factors else v) for p, v in out.items()}


class ShiftedCost:
    """A step-cost model whose steps cost `decode` times as much, or `prefill` times for a step
    with a prefill (the workload-shift factor of one draw)."""

    def __init__(self, base: Any, decode: float, prefill: float) -> None:
        self.base, self.decode, self.prefill = base, decode, prefill

    def step(self, shape: Any) -> dict[str, np.ndarray]:
        from mtpsim.calibration.shift import is_prefill

        f = np.where(is_prefill(shape.prefill_tokens), self.prefill, self.decode)
        return {p: v * f for p, v in self.base.step(shape).items()}


def shift_factors(calibration: Any, draw: Draw) -> tuple[float, float] | None:
    """(decode, prefill) step-cost factors of the draw, None where nothing is drawn."""
    if calibration is None or draw.shift is None:
        return None
    s = calibration.shift
    return float(np.exp(s.decode_sd * draw.shift)), float(np.exp(s.prefill_sd * draw.shift))


def replicate_calibration(cal: Any, index: int | None) -> Any:
    """The calibration with bootstrap refit `index` in place of its own fit (None: as is)."""
    if cal is None or index is None or not cal.bootstrap:
        return cal
    from mtpsim.calibration.schema import calibration_from_json

    return calibration_from_json({**cal.to_json(), **cal.bootstrap[index]}, cal.path)


def scaled(factors: dict[str, float], shift: tuple[float, float] | None = None
           ) -> Callable[[Any], None]:
    """A simulator adjustment that scales its step costs by `factors` (per phase) and `shift`
    ((decode, prefill): per step type)."""

    def wrap(cost: Any) -> Any:
        cost = ScaledCost(cost, factors) if factors else cost
        return ShiftedCost(cost, *shift) if shift is not None else cost

    def adjust(sim: Any) -> None:
        sim.cost = wrap(sim.cost)
        if sim.fresh_cost is not None:
            sim.fresh_cost = wrap(sim.fresh_cost)

    return adjust


def run_draw(exp: Experiment, draw: Draw, calibration: Any = None) -> dict[str, dict[str, float]]:
    """Simulate every policy of `exp` under `draw`: policy -> metric -> value (raw)."""
    from mtpsim.sim.simulator import simulate

    e = with_draw(exp, draw)
    cal = replicate_calibration(calibration, draw.replicate)
    factors, shift = scales(draw), shift_factors(calibration, draw)
    adjust = scaled(factors, shift) if factors or shift else None  # one factor for every policy
    out: dict[str, dict[str, float]] = {}
    for j, policy in enumerate(e.policies):
        e_p = e if e.uncertainty.paired else dataclasses.replace(e, seed=e.seed + 1_000_003 * j)
        res = simulate(e_p, policy, None, cal, records=False, adjust=adjust)
        out[policy] = {k: float(res.metrics[k]) for k in BENCH_METRICS}
        if res.extra.expected_acceptance_length is not None:
            out[policy][EXPECTED_AL] = float(res.extra.expected_acceptance_length)
    return out


def _run_job(shared: tuple[Experiment, Any], draw: Draw) -> dict[str, dict[str, float]]:
    return run_draw(shared[0], draw, shared[1])


def run_draws(exp: Experiment, draws: Sequence[Draw], calibration: Any = None,
              jobs: int | Pool = 1) -> Iterator[tuple[int, dict[str, dict[str, float]]]]:
    """Yield (draw index, metrics) in draw order, on the executor's pool (mtpsim.runs.executor:
    `jobs` local workers, or a Ray pool, as `mtpsim sweep` runs its points)."""
    from mtpsim.runs.executor import run_jobs

    for i, res in run_jobs(_run_job, draws, (exp, calibration), jobs):
        yield draws[i].index, res
