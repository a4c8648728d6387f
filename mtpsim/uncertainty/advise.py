"""`mtpsim advise DEPLOYMENT.toml`: which k and which policy to run, with how sure we are.

A deployment file names the model, GPU, TP and a workload mix (context lengths with weights, a
concurrency range, temperature). Every cell (k, context, concurrency) is simulated for each
policy vLLM can run on the same quasi-random draws of the priors (common random numbers across
cells and policies, so gains are paired). Per draw, a (k, policy)'s figure is the mix's mean:
context weights times the mean over the concurrencies. Gains are against the best `fresh`
setting (highest median throughput) and against plain decoding (k = 0, reported once as
`no_mtp`: without drafts the policies are one run), which every deployment simulates as its
baseline. The acceptance table is the PR's sharing-off rates
(k = 3, ~10K context, temperature 1.0, B200 TP4 NVFP4): a cell elsewhere is an extrapolation,
and its discrepancy term widens with the distance, as for `--uncertainty`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.errors import SpecError
from mtpsim.models.families import FAMILIES
from mtpsim.policies import NO_MTP, policies_where
from mtpsim.spec import Experiment, available_presets, experiment_from_dict
from mtpsim.spec.experiment import NO_REUSE_POLICIES, PRESETS_DIR, SECTIONS, TOP_LEVEL, read_toml
from mtpsim.spec.sections import QUANTIZATIONS, ModelSpec
from mtpsim.uncertainty.domain import Domain, extrapolation
from mtpsim.uncertainty.draws import Z_NAMES, Draw, drawn_priors, plan, run_draw
from mtpsim.uncertainty.intervals import Interval
from mtpsim.uncertainty.limits import MAX_CELLS, MAX_DRAWS, check_simulations
from mtpsim.uncertainty.summary import MC_SE_TARGET, Spread, adjust_many, interval
from mtpsim.verdict import MC_MARGIN, ROPE_TIMING_PCT

AL = "spec_decode_acceptance_length"
MAX_ADVISE_DRAWS = 256  # default [advise] max_draws: the stages stop there, target met or not

if TYPE_CHECKING:
    from mtpsim.runs.executor import Pool

VLLM_POLICIES = policies_where(lambda t: t.vllm)  # what vLLM 0.33.0 can run (declared traits)
# the measured sharing-off rates the acceptance model starts from (experiments/pr47352.toml)
PR_RATES = (0.8745, 0.6010, 0.3534)
PR_DOMAIN = Domain("the PR's measured rows (experiments/pr47352.toml)",
                   {"k": (3, 3), "context": (10240, 12288), "batch": (1, 32),
                    "temperature": (1.0, 1.0)},
                   {"gpu": "B200", "tp": 4, "quantization": "nvfp4"})


@dataclass(frozen=True, slots=True)
class Deployment:
    source: str
    description: str
    model: str
    gpu: str
    tp: int
    quantization: str
    max_num_seqs: int
    contexts: tuple[int, ...]
    weights: tuple[float, ...]
    concurrency: tuple[int, ...]
    output_len: int
    temperature: float
    ks: tuple[int, ...]
    policies: tuple[str, ...]
    draws: int
    seed: int
    uncertainty: dict[str, Any] = field(default_factory=dict)
    max_draws: int = MAX_ADVISE_DRAWS  # the adaptive stages' cap (draws, all replicates together)
    max_model_len: int = 0  # vLLM --max-model-len (0: the model's maximum context)
    cap_from: str = "[advise] max_draws"  # what set max_draws, named when the cap stops the stages


def _get(table: Mapping, key: str, where: str, src: str, kind: type | tuple, default: Any = None,
         required: bool = False, check: Callable[[Any], bool] | None = None,
         expected: str = "") -> Any:
    if key not in table:
        if required:
            raise SpecError(src, f"{where}.{key}", f"missing; expected {expected}")
        return default
    v = table[key]
    ok = isinstance(v, kind) and not (isinstance(v, bool) and kind is not bool)
    if isinstance(v, list):
        ok = ok and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v) and bool(v)
    if not ok or (check is not None and not check(v)):
        raise SpecError(src, f"{where}.{key}", f"expected {expected}, got {v!r}")
    return v


# The keys each table of a deployment file may hold (an unknown one is a typo: refused, as
# experiment files refuse theirs).
KEYS = {"deployment": ("model", "gpu", "tp", "quantization", "max_num_seqs", "max_model_len"),
        "workload": ("context_lengths", "context_weights", "concurrency", "output_len", "temperature"),
        "advise": ("k", "policies", "draws", "max_draws")}


def _deployment_table(raw: dict, src: str) -> dict:
    """The file's [deployment] table, once its sections and keys are checked (one line each)."""
    for key in raw:
        if key not in ("description", "seed", "deployment", "workload", "advise", "uncertainty"):
            if "deployment" not in raw and key in (*SECTIONS, *TOP_LEVEL):  # simulate's file
                raise SpecError(src, "deployment", f"missing, and its {key} marks it as an "
                                "experiment file for mtpsim simulate; expected a deployment file "
                                "with a [deployment] table of model, gpu and tp "
                                "(docs/uncertainty.md)")
            raise SpecError(src, key, "unknown section; expected deployment, workload, advise, "
                            "uncertainty, description or seed")
    dep = raw.get("deployment")
    if not isinstance(dep, dict):
        raise SpecError(src, "deployment", "missing; expected a [deployment] table with model, "
                        "gpu and tp")
    for section, known in KEYS.items():
        table = raw.get(section, {})
        if isinstance(table, dict) and (unknown := [k for k in table if k not in known]):
            raise SpecError(src, f"{section}.{unknown[0]}", f"unknown key; expected one of "
                            f"{', '.join(known)}")
    return dep


def _check_distinct(src: str, contexts: list, conc: list) -> None:
    """Each length and concurrency is one cell of the mix: a repeat would be a second cell of the
    same key (give a length once, with the weights added; a concurrency once)."""
    for key, values, what in (("context_lengths", contexts, "lengths (give a repeated one once, "
                               "with its weights added)"), ("concurrency", conc, "concurrencies")):
        if rep := next((x for x in values if values.count(x) > 1), None):
            raise SpecError(src, f"workload.{key}", f"expected distinct {what}, got {rep} "
                            f"{values.count(rep)} times in {values}")


def load_deployment(path: str | Path) -> Deployment:
    """Read and check a deployment file; each problem is one line naming file and field."""
    path = Path(path)
    src = str(path)
    raw = read_toml(path, "deployment file")  # FIFO, folder, deep nesting: one line
    dep = _deployment_table(raw, src)
    models, gpus = available_presets("models"), available_presets("gpus")
    model = _get(dep, "model", "deployment", src, str, required=True,
                 check=lambda v: v in models, expected=f"a model preset ({', '.join(models)})")
    gpu = _get(dep, "gpu", "deployment", src, str, "b200", check=lambda v: v in gpus,
               expected=f"a GPU preset ({', '.join(gpus)})")
    tp = _get(dep, "tp", "deployment", src, int, 8, check=lambda v: v >= 1,
              expected="an integer >= 1")
    quant = _get(dep, "quantization", "deployment", src, str, "fp8",
                 check=lambda v: v in QUANTIZATIONS,
                 expected=", ".join(QUANTIZATIONS))
    seqs = _get(dep, "max_num_seqs", "deployment", src, int, 64, check=lambda v: v >= 1,
                expected="an integer >= 1")
    max_len = _get(dep, "max_model_len", "deployment", src, int, 0, check=lambda v: v >= 0,
                   expected="an integer >= 0 (vLLM --max-model-len; 0: the model's maximum context)")
    w = raw.get("workload", {})
    if not isinstance(w, dict):
        raise SpecError(src, "workload", "expected a table")
    contexts = _get(w, "context_lengths", "workload", src, list, [8192],
                    check=lambda v: all(isinstance(x, int) and x >= 1 for x in v),
                    expected="a non-empty list of prompt lengths (integers >= 1)")
    weights = _get(w, "context_weights", "workload", src, list, [1.0] * len(contexts),
                   check=lambda v: (len(v) == len(contexts) and all(0 <= x < math.inf for x in v)
                                    and sum(v) > 0),
                   expected=f"{len(contexts)} non-negative weights, one per context length")
    conc = _get(w, "concurrency", "workload", src, list, [32],
                check=lambda v: all(isinstance(x, int) and 1 <= x <= MAX_CONCURRENCY for x in v),
                expected=f"a non-empty list of concurrencies (integers in [1, {MAX_CONCURRENCY:,}]:"
                         " a cell runs 2 x concurrency prompts)")
    _check_distinct(src, contexts, conc)
    out_len = _get(w, "output_len", "workload", src, int, 512, check=lambda v: v >= 1,
                   expected="an integer >= 1")
    temp = float(_get(w, "temperature", "workload", src, int | float, 1.0,
                      check=lambda v: v >= 0, expected="a number >= 0"))
    a = raw.get("advise", {})
    if not isinstance(a, dict):
        raise SpecError(src, "advise", "expected a table")
    ks = _get(a, "k", "advise", src, list, [1, 2, 3, 4, 5],
              check=lambda v: all(isinstance(x, int) and 0 <= x <= 8 for x in v),
              expected="a non-empty list of k in 0..8")
    if not any(k >= 1 for k in ks):  # k = 0 alone: nothing to advise, only the baseline
        raise SpecError(src, "advise.k", "expected at least one k >= 1 (k = 0, plain decoding, is "
                        f"the baseline the gains are taken against), got {ks}")
    family = _preset_family(model)
    dense = FAMILIES[family].dense_attention
    pols = a.get("policies", list(NO_REUSE_POLICIES if dense else VLLM_POLICIES))
    if (not isinstance(pols, list) or not pols or pols[0] != "fresh"
            or any(p not in VLLM_POLICIES for p in pols)):
        raise SpecError(src, "advise.policies", "expected a list starting with \"fresh\" of "
                        f"policies vLLM runs ({', '.join(VLLM_POLICIES)}), got {pols!r}")
    if dense and (reuse := [p for p in pols if p not in NO_REUSE_POLICIES]):
        raise SpecError(src, "advise.policies", f"expected only {', '.join(NO_REUSE_POLICIES)} "
                        f"for model {model!r} (family {family!r}, dense attention: no indexer, "
                        f"no top-k row to reuse), got {', '.join(reuse)}")
    draws = _get(a, "draws", "advise", src, int, 64, check=lambda v: 2 <= v <= MAX_DRAWS,
                 expected=f"an integer in 2..{MAX_DRAWS}")
    first = first_stage(draws)
    most = _get(a, "max_draws", "advise", src, int, max(MAX_ADVISE_DRAWS, first),
                check=lambda v: first <= v <= MAX_DRAWS, expected=f"an integer in {first}..{MAX_DRAWS} "
                "(at least [advise] draws" + (f" {draws}, run as {rounded(draws)}" if first != draws
                                              else "") + ")")
    cap_from = "[advise] max_draws" if "max_draws" in a else "the default max_draws"
    cells = len({0, *ks}) * len(contexts) * len(conc)
    if cells > MAX_CELLS:
        raise SpecError(src, "workload.context_lengths", f"expected at most {MAX_CELLS:,} cells (k x "
                        f"contexts x concurrencies), got {cells:,}")
    seed = _get(raw, "seed", "", src, int, 0, check=lambda v: v >= 0, expected="an integer >= 0")
    unc = raw.get("uncertainty", {})
    if not isinstance(unc, dict):
        raise SpecError(src, "uncertainty", "expected a table")
    d = Deployment(src, str(raw.get("description", "")), model, gpu, tp, quant, seqs,
                   tuple(contexts), tuple(float(x) for x in weights), tuple(conc), out_len,
                   temp, tuple(sorted({0, *ks})), tuple(pols), draws, seed, unc, max_draws=most,
                   cap_from=cap_from, max_model_len=max_len)
    longest = cell_experiment(d, 0, contexts[0], conc[0]).model.max_position_embeddings
    if longest and max_len > longest:  # vLLM refuses it (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN)
        raise SpecError(src, "deployment.max_model_len", f"expected at most {model}'s maximum "
                        f"context, {longest:,} tokens (its max_position_embeddings: vLLM refuses a "
                        f"longer max_model_len), got {max_len:,}")
    return d


def _preset_family(model: str) -> str:
    """The model family a (known) model preset declares, else ModelSpec's default."""
    family = read_toml(PRESETS_DIR / "models" / f"{model}.toml", "preset").get("family")
    return family if family in FAMILIES else ModelSpec().family


def _rates(k: int) -> list[float]:
    """The PR's marginal rates for k positions; beyond 3 the last conditional rate repeats."""
    from mtpsim.metrics import conditional_to_marginal, marginal_to_conditional

    cond = marginal_to_conditional(list(PR_RATES))
    cond = (cond + [cond[-1]] * k)[:max(k, len(cond))]
    return conditional_to_marginal(cond)


MAX_CONCURRENCY = 50_000  # a cell's 2 x concurrency prompts stay within workload.num_prompts' 100,000


def cell_experiment(dep: Deployment, k: int, ctx: int, conc: int) -> Experiment:
    raw = {"description": f"{dep.model} k={k} context {ctx} concurrency {conc}", "seed": dep.seed,
           "policies": list(dep.policies),
           "model": {"preset": dep.model, "quantization": dep.quantization},
           "hardware": {"preset": dep.gpu},
           "engine": {"tp": dep.tp, "max_num_seqs": dep.max_num_seqs,
                      "max_model_len": dep.max_model_len},
           "speculative": {"num_speculative_tokens": k},
           "workload": {"num_prompts": max(8, 2 * conc), "input_len": ctx,
                        "output_len": dep.output_len, "max_concurrency": conc,
                        "temperature": dep.temperature},
           "acceptance": {"per_position": _rates(k)},
           "uncertainty": dep.uncertainty}
    try:
        return experiment_from_dict(raw, source=dep.source)
    except SpecError as e:  # name the deployment file's own field, not the cell's spec field
        if e.source != dep.source or e.field not in DEPLOYMENT_FIELDS:
            raise
        field, note = DEPLOYMENT_FIELDS[e.field]
        raise SpecError(e.source, field, e.expected + note) from None


# A cell's spec field -> the deployment file's field it comes from (and how, where not as is).
DEPLOYMENT_FIELDS = {
    "model.preset": ("deployment.model", ""), "model.quantization": ("deployment.quantization", ""),
    "hardware.preset": ("deployment.gpu", ""), "engine.tp": ("deployment.tp", ""),
    "engine.max_num_seqs": ("deployment.max_num_seqs", ""),
    "engine.max_model_len": ("deployment.max_model_len", ""),
    "workload.input_len": ("workload.context_lengths", " (a cell's prompt length)"),
    "workload.output_len": ("workload.output_len", ""),
    "workload.temperature": ("workload.temperature", ""),
    "workload.max_concurrency": ("workload.concurrency", ""),
    "workload.num_prompts": ("workload.concurrency", " (a cell runs max(8, 2 x concurrency) prompts)"),
    "speculative.num_speculative_tokens": ("advise.k", ""),
}


REPLICATES = 16  # independent scrambles of the Sobol design: the MC SE's degrees of freedom + 1
INNER = 64  # discrepancy scores per draw (conditional Monte Carlo: no simulation, only `adjust`)
MIX_METRICS = ("output_throughput", "median_tpot_ms")  # what the advice reads of each cell


@dataclass(slots=True)
class Advice:
    dep: Deployment
    cells: list[tuple[int, int, int]]  # (k, context, concurrency) simulated
    skipped: list[str]  # cells that do not fit, with why
    # cell -> policy -> metric -> [draws, inner]: each draw's figures adjusted at its inner
    # discrepancy scores (mtpsim.uncertainty.rqmc)
    values: dict[tuple[int, int, int], dict[str, dict[str, np.ndarray]]]
    notes: dict[tuple[int, int, int], tuple[str, ...]]  # extrapolation notes per cell
    draws: list[Draw]
    wall_s: float = 0.0
    replicate: np.ndarray | None = None  # [draws] each draw's RQMC replicate (None: one design)
    stages: list[int] = field(default_factory=list)  # draws after each stage
    stage_se: list[float] = field(default_factory=list)  # the largest quoted MC SE after each
    target: float = MC_SE_TARGET  # the MC SE the quoted delta ends are drawn to
    cap: int = 0  # the most draws the stages may reach
    stopped: str = ""  # why the stages stopped: "target" (met), "cap" (not met), "no MC SE"
    skipped_why: str = "do not fit in GPU memory"  # why the skipped cells do not run
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def rope_pct(self) -> float:
        """The region of practical equivalence of a throughput delta, ± % ([uncertainty])."""
        return float(self.dep.uncertainty.get("rope_timing_pct", ROPE_TIMING_PCT))

    @property
    def n_draws(self) -> int:
        return len(self.draws)

    def interval(self, x: np.ndarray, prob: float, delta: bool = False,
                 half: float = math.nan) -> Interval:
        """x [draws, inner] summarised; a delta with the control variate of the draws' points
        and its MC SE from the replicates (mtpsim.uncertainty.controlled)."""
        return interval(x, None, prob, delta=delta, half=half, groups=self.replicate,
                        controls=self.units() if delta else None, seed=self.dep.seed)

    def units(self) -> np.ndarray | None:
        """[draws, d] each draw's point of the unit cube (its priors' quantiles); None without
        drawn parameters."""
        def make() -> np.ndarray | None:
            names = list(self.draws[0].unit) if self.draws else []
            return np.array([[d.unit[n] for n in names] for d in self.draws]) if names else None
        return self._cached(("units",), make)

    def _cached(self, key: tuple, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def gain_interval(self, k: int, policy: str, prob: float) -> Interval:
        return self._cached(("gain", k, policy, prob),
                            lambda: self.interval(self.gain(k, policy), prob, delta=True))

    def no_mtp_interval(self, k: int, policy: str, prob: float) -> Interval:
        return self._cached(("no_mtp", k, policy, prob),
                            lambda: self.interval(self.gain_vs_no_mtp(k, policy), prob, delta=True))

    def share_interval(self, k: int, prob: float) -> Interval:
        return self._cached(("share", k, prob), lambda: self.interval(
            self.share_vs_fresh(k), prob, delta=True, half=self.rope_pct))

    def level_interval(self, k: int, policy: str, metric: str, prob: float) -> Interval:
        return self._cached(("level", k, policy, metric, prob),
                            lambda: self.interval(self.mix(k, policy, metric), prob))

    def mix(self, k: int, policy: str, metric: str) -> np.ndarray:
        """[draws, inner]: the workload mix's figure for (k, policy); at k = 0 every policy is the
        one plain-decoding run, `no_mtp`."""
        policy = NO_MTP if k == 0 else policy
        key = (k, policy, metric)
        if key in self._cache:
            return self._cache[key]
        out, total = 0.0, 0.0
        for ctx, w in zip(self.dep.contexts, self.dep.weights, strict=True):
            cells = [(k, ctx, c) for c in self.dep.concurrency if (k, ctx, c) in self.values]
            if not cells or w == 0:
                continue
            out = out + w * np.mean([self.values[c][policy][metric] for c in cells], axis=0)
            total += w
        shape = next(iter(next(iter(self.values.values())).values()))[metric].shape
        res = out / total if total else np.full(shape, math.nan)
        self._cache[key] = res
        return res

    def ks(self) -> list[int]:
        return [k for k in self.dep.ks if all((k, x, c) in self.values for x in self.dep.contexts
                                              for c in self.dep.concurrency)]

    def pairs(self) -> list[tuple[int, str]]:
        """The (k, policy) settings compared: no_mtp at k = 0, each policy at every k >= 1."""
        return [(k, p) for k in self.ks() for p in ((NO_MTP,) if k == 0 else self.dep.policies)]

    def best_fresh(self) -> int:
        """The k >= 1 whose fresh run has the highest median throughput (0 if only k = 0 fits)."""
        ks = [k for k in self.ks() if k > 0] or [0]
        return self._cached(("best",), lambda: max(ks, key=lambda k: float(
            np.median(self.mix(k, "fresh", "output_throughput")))))

    def gain_vs_no_mtp(self, k: int, policy: str) -> np.ndarray:
        """Per draw, % output throughput over plain decoding (k = 0)."""
        base = self.mix(0, NO_MTP, "output_throughput")
        return 100 * (self.mix(k, policy, "output_throughput") / base - 1)

    def gain(self, k: int, policy: str) -> np.ndarray:
        """Per draw, % output throughput over the best fresh setting."""
        base = self.mix(self.best_fresh(), "fresh", "output_throughput")
        return 100 * (self.mix(k, policy, "output_throughput") / base - 1)

    def share_vs_fresh(self, k: int, ctx: int | None = None) -> np.ndarray:
        """Per draw, % output throughput of share over fresh at the same k (one context, or the mix)."""
        if ctx is None:
            return 100 * (self.mix(k, "share", "output_throughput")
                          / self.mix(k, "fresh", "output_throughput") - 1)
        cells = [(k, ctx, c) for c in self.dep.concurrency if (k, ctx, c) in self.values]
        f = np.mean([self.values[c]["fresh"]["output_throughput"] for c in cells], axis=0)
        s = np.mean([self.values[c]["share"]["output_throughput"] for c in cells], axis=0)
        return 100 * (s / f - 1)

    def rows(self, prob: float) -> list[dict[str, Any]]:
        out = []
        has_base = 0 in self.ks()
        for k, p in self.pairs():
            row = {"k": k, "policy": p,
                   "output_throughput": self.level_interval(k, p, "output_throughput", prob),
                   "median_tpot_ms": self.level_interval(k, p, "median_tpot_ms", prob),
                   "gain_pct": self.gain_interval(k, p, prob)}
            if has_base and k > 0:
                row["gain_vs_no_mtp_pct"] = self.no_mtp_interval(k, p, prob)
            if k > 0 and p != "fresh":
                row["vs_fresh_same_k"] = self.share_interval(k, prob)
            if (k, p) == (self.best_fresh(), "fresh"):
                row["baseline"] = True  # its gain is 0 by definition: printed "baseline"
            out.append(row)
        return out

    def best_median(self, prob: float) -> tuple[int, str, Interval, bool]:
        """(k, policy, gain interval, robust): the best median gain, a candidate; robust when its
        interval excludes 0 by more than its Monte Carlo margin, or it is the best fresh setting
        itself."""
        best_k = self.best_fresh()
        cands = self.pairs()
        gains = {c: self.gain_interval(*c, prob) for c in cands}
        k, p = max(cands, key=lambda c: gains[c].median)
        iv = gains[(k, p)]
        robust = (k, p) == (best_k, "fresh") or above(iv, 0.0)
        return k, p, iv, robust

    def recommendation(self, prob: float) -> tuple[int, str, Interval]:
        """(k, policy, gain interval): what to deploy, the one decision the table, the verdict
        lines and --json all report: the best median gain where it is robust, else the best
        fresh setting (the baseline of the gains)."""
        k, p, iv, robust = self.best_median(prob)
        if robust:
            return k, p, iv
        best = self.best_fresh()
        return best, "fresh", self.gain_interval(best, "fresh", prob)


def above(iv: Interval, bound: float) -> bool:
    """The interval lies above `bound` by more than its Monte Carlo margin (mtpsim.verdict)."""
    return iv.lo - margin(iv) > bound


def below(iv: Interval, bound: float) -> bool:
    return iv.hi + margin(iv) < bound


def margin(iv: Interval) -> float:
    return 0.0 if math.isnan(iv.mc_se) else MC_MARGIN * iv.mc_se


def quoted(rows: list[dict[str, Any]]) -> dict[str, Interval]:
    """Every delta interval the report quotes, by label: what the MC SE target covers."""
    names = {"gain_pct": "{p} gain", "gain_vs_no_mtp_pct": "{p} vs no MTP",
             "vs_fresh_same_k": "{p} vs fresh"}
    return {f"k={r['k']} " + label.format(p=r["policy"]): r[key] for r in rows
            for key, label in names.items() if key in r and not (key == "gain_pct" and r.get("baseline"))}


def missed(rows: list[dict[str, Any]], target: float) -> list[tuple[str, float]]:
    """The quoted delta ends whose MC SE is above `target` (or unknown), worst first."""
    late = [(k, iv.mc_se) for k, iv in quoted(rows).items() if not iv.mc_se <= target]
    return sorted(late, key=lambda kv: -kv[1] if kv[1] == kv[1] else -math.inf)


def draws_needed(rows: list[dict[str, Any]], target: float, n_draws: int) -> dict[str, int]:
    """Per quoted end that missed `target` (with a known SE): the draws the SE's 1/sqrt(draws)
    law says would meet it, n (SE / target)^2. A projection, not a promise: the control variate
    and the Sobol design may do better, a heavy tail worse."""
    return {k: math.ceil(n_draws * (se / target) ** 2) for k, se in missed(rows, target)
            if se == se and target > 0}


def worst_se(rows: list[dict[str, Any]]) -> float:
    """The largest MC SE of a quoted delta end (NaN where none has one)."""
    ses = [iv.mc_se for iv in quoted(rows).values() if not math.isnan(iv.mc_se)]
    return max(ses) if ses else math.nan


def advise(dep: Deployment, jobs: int | Pool = 1, progress: Callable[[int, int], None] | None = None,
           prob: float = 0.9) -> Advice:
    """Every cell simulated on stages of randomized-QMC draws: R replicates of `dep.draws` / R
    draws first, then each replicate doubled until every quoted delta end's MC SE is at most
    the target or the next stage would pass `dep.max_draws`."""
    import time

    from mtpsim.models.memory import check_fits

    t0 = time.perf_counter()
    cells, skipped, exps, why = [], [], {}, set()
    for k in dep.ks:
        for ctx in dep.contexts:
            for c in dep.concurrency:
                exp = cell_experiment(dep, k, ctx, c)
                try:
                    check_fits(exp, max_len_field="deployment.max_model_len")
                except SpecError as e:
                    skipped.append(f"k={k} context {ctx} concurrency {c}: {e.expected}")
                    why.add(SKIP_WHY.get(e.field, SKIP_WHY[""]))
                    continue
                cells.append((k, ctx, c))
                exps[(k, ctx, c)] = exp
    fits = " and ".join(sorted(w[0] for w in why))  # what the skipped failed: memory, length
    if not cells:
        raise SpecError(dep.source, "workload", f"expected at least one (context, concurrency) "
                        f"that {fits}; none does: " + "; ".join(skipped[:2]))
    whole = [k for k in dep.ks if k > 0 and all((k, x, c) in exps for x in dep.contexts
                                                for c in dep.concurrency)]
    if not whole:  # the mix is priced only where every one of its cells runs
        raise SpecError(dep.source, "workload", "expected every context and concurrency of the mix "
                        f"to run at some k >= 1 (a cell that {fits}); " + "; ".join(skipped[:2]))
    reps, per, cap_per = design(dep.draws, dep.max_draws)
    check_simulations(reps * cap_per, len(cells), len(dep.policies),
                      "--max-draws / [advise] max_draws", "cells", dep.source)
    target = float(dep.uncertainty.get("mc_se_target", MC_SE_TARGET))
    spreads = {cell: Spread.of(extrapolation(exps[cell], PR_DOMAIN), exps[cell].uncertainty,
                               calibrated=True) for cell in cells}
    notes = {cell: extrapolation(exps[cell], PR_DOMAIN).notes for cell in cells}
    adv = Advice(dep, cells, skipped, {c: {} for c in cells}, notes, [], replicate=np.zeros(0, int),
                 target=target, cap=reps * cap_per,
                 skipped_why=" or ".join(sorted(w[1] for w in why)))
    have, done = 0, 0
    while True:
        draws, groups, z = stage(exps[cells[0]], reps, have, per, dep.seed, len(adv.draws))
        total = done + len(cells) * len(draws)
        raw: dict[tuple, dict[int, dict]] = {cell: {} for cell in cells}
        for cell, idx, res in _run(exps, [(cell, d) for cell in cells for d in draws], jobs):
            raw[cell][idx] = res
            done += 1
            if progress is not None:
                progress(done, total)
        for cell in cells:
            figs = [raw[cell][d.index] for d in draws]
            cols = {p: {m: np.array([f[p][m] for f in figs]) for m in (*MIX_METRICS, AL)}
                    for p in figs[0]}
            new = adjust_many(cols, z, spreads[cell], exps[cell].policies[0], exps[cell].k,
                              MIX_METRICS)
            old = adv.values[cell]
            adv.values[cell] = {p: {m: (np.concatenate([old[p][m], v]) if old else v)
                                    for m, v in ms.items()} for p, ms in new.items()}
        adv.draws += draws
        adv.replicate = np.concatenate([adv.replicate, groups])
        adv.stages.append(len(adv.draws))
        adv._cache.clear()
        have = per
        se = worst_se(adv.rows(prob))
        adv.stage_se.append(se)
        if not (se > target) or 2 * per > cap_per:  # met (or no SE), or the cap
            adv.stopped = "target" if se <= target else "no MC SE" if se != se else "cap"
            break
        per *= 2
    adv.wall_s = time.perf_counter() - t0
    return adv


# check_fits' field -> what a cell it refuses fails to do, said of one cell and of the skipped
SKIP_WHY = {"workload.input_len": ("lies within max_model_len", "exceed max_model_len"),
            "": ("fits in GPU memory", "do not fit in GPU memory")}


def first_stage(draws: int) -> int:
    """The draws the first stage runs for `draws` asked: R = min(16, draws) replicates x the
    smallest power of two that reaches `draws` (20 -> 16 x 2 = 32; 3 -> 3 x 1)."""
    reps, per, _ = design(draws, draws)
    return reps * per


def rounded(draws: int) -> str:
    """How `draws` is run in the first stage: "32 (16 replicates x 2)"."""
    reps, per, _ = design(draws, draws)
    return f"{reps * per:,} ({reps} replicates x {per})"


def design(draws: int, max_draws: int) -> tuple[int, int, int]:
    """(replicates, first-stage draws per replicate, the most per replicate): per-replicate
    counts are powers of two (where a scrambled Sobol design is balanced); a stage doubles
    every replicate and runs only if the total stays within `max_draws`."""
    reps = min(REPLICATES, draws)
    per = 1 << max(0, math.ceil(math.log2(draws / reps)))
    cap = max(per, 1 << max(0, int(math.floor(math.log2(max(max_draws, 1) / reps)))))
    return reps, per, cap


def stage(first: Experiment, reps: int, start: int, stop: int, seed: int,
          index0: int) -> tuple[list[Draw], np.ndarray, dict[str, np.ndarray]]:
    """Rows [start, stop) of each replicate's scrambled Sobol design over the priors: the draws
    (discrepancy scores 0: they are integrated per draw instead), each draw's replicate, and its
    INNER discrepancy scores (Z_NAMES -> [draws, INNER])."""
    from mtpsim.uncertainty.rqmc import inner_scores, sobol_rows

    d = len(drawn_priors(first))
    draws, groups, zs = [], [], []
    for r in range(reps):
        u = sobol_rows(d, start, stop, seed * 7919 + 104729 * (r + 1))
        full = np.hstack([u, np.full((len(u), len(Z_NAMES)), 0.5)])
        for j, dr in enumerate(plan(first, len(u), unit=full)):
            draws.append(replace(dr, index=index0 + len(draws),
                                 seed=seed + 100003 * (r + 1) + start + j))
        groups.append(np.full(len(u), r))
        zs.append(inner_scores(start, stop, INNER, seed * 7919 + 15485863 * (r + 1)))
    z = np.concatenate(zs)
    return draws, np.concatenate(groups), {n: z[:, :, i] for i, n in enumerate(Z_NAMES)}


def _one(exps: dict, task: tuple) -> dict:
    cell, d = task
    return run_draw(exps[cell], d)


def _run(exps: dict, tasks: list, jobs: int | Pool):
    """(cell, draw index, metrics) as each (cell, draw) finishes, on the executor's pool."""
    from mtpsim.runs.executor import run_jobs

    for i, res in run_jobs(_one, tasks, exps, jobs, ordered=False):
        cell, d = tasks[i]
        yield cell, d.index, res
