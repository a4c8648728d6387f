"""Declared priors: which parameters a prediction rests on without a measurement, and how
unsure we are of each (docs/uncertainty.md lists every default and its source).

A prior is written as text, `uniform(lo, hi)`, `loguniform(lo, hi)`, `normal(mean, sd)` or
`fixed` (not drawn), in the spec's `[uncertainty.priors]` table keyed by parameter name, e.g.
`critical_entries = "loguniform(4, 32)"`, or with `--set uncertainty.priors.critical_entries=...`.
This module imports nothing from the spec (the spec's field check calls it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from mtpsim.dataclass import dataclass
from mtpsim.models.penalty import PENALISING


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter a draw can set: a spec field (`section.key`) or a phase scale (`scale:PHASE`,
    a multiplier of one step-cost phase, for costs the spec has no field for)."""

    target: str
    lo: float  # the values the target accepts
    hi: float
    default: str  # the prior the presets ship
    source: str  # where the default comes from
    calibrated_by_file: bool = False  # a `[calibration] file` replaces it (then not drawn)
    only_with: tuple[str, tuple[str, ...]] | None = None  # (spec field, values it acts under)


PARAMS: dict[str, Param] = {
    "critical_entries": Param(
        "acceptance.critical_entries", 1e-3, 1e6, "loguniform(2, 64)",
        "assumed, wide: no public figure for DeepSeek-V3.2; the reference engine fits ~5; not "
        "drawn under acceptance.penalty = none", calibrated_by_file=True,
        only_with=("acceptance.penalty", PENALISING)),
    "overlap_agreement": Param(
        "acceptance.overlap_agreement", 0.0, 1.0, "uniform(0.2, 0.6)",
        "public: 35-50 % consecutive-step top-2048 overlap at 68K (TensorRT-LLM GVR), widened",
        calibrated_by_file=True, only_with=("acceptance.penalty", PENALISING)),
    "overlap_step_exponent": Param(
        "acceptance.overlap_step_exponent", 0.0, 10.0, "uniform(0.25, 1.0)",
        "assumed, wide: how agreement decays with the step gap is unmeasured",
        calibrated_by_file=True, only_with=("acceptance.penalty", PENALISING)),
    "target_agreement": Param(
        "acceptance.target_agreement", 0.0, 1.0, "uniform(0.0, 0.2)",
        "assumed: target_share collapses acceptance in public reports (only target_share uses it)",
        calibrated_by_file=True, only_with=("acceptance.penalty", PENALISING)),
    "request_sigma": Param(
        "acceptance.request_sigma", 0.0, 10.0, "uniform(0.0, 0.8)",
        "reference-engine fit: 0.34 (logit SD between requests); widened",
        calibrated_by_file=True),
    "mem_efficiency": Param(
        "calibration.mem_efficiency", 1e-3, 1.0, "uniform(0.3, 0.8)",
        "assumed, wide: the PR's sharing-off row fits 0.39; decode kernels reach 0.5-0.8",
        calibrated_by_file=True),
    "compute_efficiency": Param(
        "calibration.compute_efficiency", 1e-3, 1.0, "uniform(0.3, 0.7)",
        "assumed, wide (not identifiable from the PR's row); since the GEMMs have their own "
        "rates (gemm_efficiency) it acts on the sparse MLA, indexer logits and LM head only",
        calibrated_by_file=True),
    "gemm_efficiency": Param(
        "calibration.gemm_efficiency", 0.05, 4.0, "loguniform(0.75, 1.33)",
        "public kernel tables: the GEMM model fitted to DeepGEMM's H800 table leaves a "
        "leave-one-out RMS log error of 0.12 (largest 31 %); the same kernel timed by vLLM's "
        "harness on H100 runs 22 % slower at large M, on H20 24-34 % faster (PRs #13917, "
        "#49932); Blackwell and AMD unchecked (docs/prefill.md)", calibrated_by_file=True),
    "comm_efficiency": Param(
        "calibration.comm_efficiency", 1e-3, 1.0, "uniform(0.4, 0.9)",
        "assumed, wide", calibrated_by_file=True),
    "overhead_ms": Param(
        "calibration.overhead_ms", 0.0, 1e4, "loguniform(0.3, 3.0)",
        "assumed, wide: host and launch time per step with CUDA graphs", calibrated_by_file=True),
    "eager_overhead_ms": Param(
        "calibration.eager_overhead_ms", 0.0, 1e4, "loguniform(0.5, 8.0)",
        "assumed, wide: extra per eager (prefill) step", calibrated_by_file=True),
    "kernel_floor_us": Param(
        "hardware.kernel_floor_us", 0.0, 1e4, "uniform(2.0, 6.0)",
        "public: a few µs per small kernel on Hopper/Blackwell; assumed range",
        calibrated_by_file=True),
    "indexer_cost": Param(
        "scale:draft_decode_indexer", 0.0, 1e4, "loguniform(0.5, 16)",
        "assumed, wide: the roofline finds ~36 µs per step; the PR's +0.66 % would need ~0.5 ms",
        calibrated_by_file=True),
    "host_us_per_request": Param(
        "calibration.host_us_per_request", 0.0, 1e5, "loguniform(5, 30)",
        "measured and public: vLLM 0.33.0's Scheduler.schedule + update_from_output take ~30-35 "
        "µs of CPU per running request per step on this 2-core VM, whose update_from_output "
        "runs 8-10x slower than vLLM PR #46112's (1.1 µs per request at 128 and 256), so ~4 µs "
        "on that host; up to 2x for a server core, plus the SchedulerOutput broadcast to the "
        "workers (vLLM's benchmark_scheduler_output_rpc_pack.py quotes a production capture, "
        "~9.5 µs per request at ~200) and the workers' input preparation (docs/public-corpus.md, "
        "'Host work per request, re-grounded'); drawn only where the work is serial",
        calibrated_by_file=True, only_with=("engine.async_scheduling", (False,))),
    "frontend_ms_per_request": Param(
        "calibration.frontend_ms_per_request", 0.0, 1e4, "loguniform(10, 24)",
        "fitted on the training rows, the admission alone (it takes turns with the output "
        "slices on the API server's loop): at the other priors' medians the three vLLM TP8 "
        "ShareGPT rows at t = 0 (median TTFT 10.3-13.6 s, P99 20.7-23.8 s) need 17-21.5 ms, "
        "the DP8 + EP row (one API server for eight ranks) 10 ms (P99) to 16 ms (median) "
        "(docs/public-corpus.md, v6); drawn only without max_concurrency",
        calibrated_by_file=True, only_with=("workload.max_concurrency", (None,))),
    "frontend_us_per_chunk": Param(
        "calibration.frontend_us_per_chunk", 0.0, 1e5, "loguniform(40, 200)",
        "public, an upper bound: vLLM V1's one API server streamed ~56 req/s x 200 tokens "
        "(11,200 chunks/s) within 3 % of the offline engine (vLLM PR #11636), so <= ~90 µs a "
        "completions chunk; the chat path (template deltas, reasoning and tool parsers) up to "
        "~2x; drawn only without max_concurrency", calibrated_by_file=True,
        only_with=("workload.max_concurrency", (None,))),
    "clean_row_gbps": Param(
        "calibration.clean_row_gbps", 0.01, 1e5, "loguniform(5, 50)",
        "public, one figure: vLLM PR #33568 gained 15 % output throughput on 8 x H200 (TP8, 16 "
        "requests, MTP k = 1, TPOT 31.6 ms) by dropping DeepGEMM's logits fill; at ~1.8 tokens "
        "a step and 62 indexers a step that is <= ~120 µs per fill of 32 rows of 655 KB, so "
        ">= ~5.5 GB/s per warp; the upper end, an SM's share of the H200's HBM (4.8 TB/s / 132 "
        "= 36 GB/s) rounded up, is assumed; drawn only with engine.indexer_clean_logits",
        calibrated_by_file=True, only_with=("engine.indexer_clean_logits", (True,))),
    "moe_imbalance": Param(
        "calibration.moe_imbalance", 1.0, 16.0, "uniform(1.05, 1.8)",
        "assumed, wide: the busiest GPU's routed tokens over the mean under expert parallelism "
        "without EPLB (DeepSeek built EPLB because it is well above 1); drawn only with engine.ep",
        calibrated_by_file=True, only_with=("engine.ep", (True,))),
    "sort_sampler_cost": Param(
        "scale:rejection_sample", 0.0, 1e4, "loguniform(0.6, 1.6)",
        "public: vLLM PR #33538's H100 timings of the sort-based top-p mask (16.3 ms for 1,024 x "
        "131,072 logits), scaled to the GPU by HBM bandwidth; how a sort scales with bandwidth "
        "is assumed; drawn only with engine.sampler = sort",
        calibrated_by_file=True, only_with=("engine.sampler", ("sort",))),
    "acceptance_scale": Param(
        "acceptance.rate_scale", 0.05, 2.0, "fixed",
        "by acceptance.dataset_class and workload.temperature (CLASS_PRIORS; docs/uncertainty.md); "
        "fixed when the rates were measured on this workload"),
    "critical_step_exponent": Param(
        "acceptance.critical_step_exponent", -10.0, 10.0, "fixed",
        "reference-engine fits (docs/simulator.md, transfer); the deepseek-v3.2 preset sets a range",
        calibrated_by_file=True, only_with=("acceptance.penalty", ("kappa_step", "kappa_lk"))),
    "critical_lk_exponent": Param(
        "acceptance.critical_lk_exponent", -5.0, 5.0, "fixed",
        "reference-engine fit: 0.27 on the base model's calibration runs (docs/calibration.md); "
        "one model size only, so not carried to DeepSeek-V3.2 by default",
        calibrated_by_file=True, only_with=("acceptance.penalty", ("kappa_lk",))),
}
DISTRIBUTIONS = ("uniform", "loguniform", "normal", "fixed")
# Prior on acceptance.rate_scale (a multiplier of the given conditional rates, the PR's SPEED-Bench
# low-entropy ones at temperature 1 by default) for a workload of each class, at greedy (0) and
# sampled (> 0) temperature. Public anchors (docs/uncertainty.md, "Acceptance by workload"): the
# PR's rows (0.8745 at position 0; share vs fresh 0.869), DeepSeek-V3's report (85-90 % for the
# second token "across various generation topics"), vLLM PR #12755 (R1, k = 1: 81-82.3 %), vLLM
# PR #48892 (GSM8K, temperature 0: 83.6 % at k = 1), vLLM PR #41044 (DeepSeek-V4-Flash, random
# prompts, temperature 1: 70 % / 28.7 % at positions 0 / 1), InferenceX PR #1630 (raw random
# prompts "silently regress the accept rate"). Widths are wider than the anchors' spread.
CLASS_PRIORS = {("low_entropy", False): "uniform(0.95, 1.05)",
                ("low_entropy", True): "uniform(0.95, 1.08)",
                ("code_math", False): "uniform(0.88, 1.08)",
                ("code_math", True): "uniform(0.9, 1.1)",
                ("chat", False): "uniform(0.82, 1.05)",
                ("chat", True): "uniform(0.85, 1.08)",
                ("random", False): "uniform(0.5, 1.0)",
                ("random", True): "uniform(0.55, 1.05)"}


def class_prior(dataset_class: str, temperature: float) -> str:
    """The shipped prior on acceptance.rate_scale for a workload class ('fixed' for '')."""
    return CLASS_PRIORS.get((dataset_class, temperature == 0.0), "fixed")
_CALL = re.compile(r"^\s*([a-z_]+)\s*(?:\((.*)\))?\s*$")


@dataclass(frozen=True, slots=True)
class Prior:
    """A parsed prior: its distribution and two parameters (nan for fixed)."""

    kind: str
    a: float = math.nan
    b: float = math.nan

    def ppf(self, u: float) -> float:
        """The value at quantile `u` in (0, 1)."""
        if self.kind == "uniform":
            return self.a + u * (self.b - self.a)
        if self.kind == "loguniform":
            return math.exp(math.log(self.a) + u * (math.log(self.b) - math.log(self.a)))
        if self.kind == "normal":
            from scipy.special import ndtri

            return self.a + self.b * float(ndtri(u))
        raise ValueError(f"prior {self.kind} is not drawn")

    def text(self) -> str:
        return self.kind if self.kind == "fixed" else f"{self.kind}({self.a:g}, {self.b:g})"


def parse_prior(text: str, param: Param | None = None) -> Prior:
    """`uniform(0.2, 0.6)` -> Prior; ValueError saying what was expected."""
    m = _CALL.match(text) if isinstance(text, str) else None
    if m is None or m.group(1) not in DISTRIBUTIONS:
        raise ValueError(f"a prior {', '.join(d + '(a, b)' for d in DISTRIBUTIONS[:3])} or fixed")
    kind, args = m.group(1), m.group(2)
    if kind == "fixed":
        if args not in (None, ""):
            raise ValueError("fixed without arguments (the spec's value is used)")
        return Prior("fixed")
    try:
        nums = [float(x) for x in (args or "").split(",")]
    except ValueError:
        nums = []
    if len(nums) != 2 or not all(math.isfinite(x) for x in nums):
        raise ValueError(f"{kind}(a, b) with two numbers")
    a, b = nums
    if kind in ("uniform", "loguniform") and not a < b:
        raise ValueError(f"{kind}(lo, hi) with lo < hi (a positive width)")
    if kind == "loguniform" and a <= 0:
        raise ValueError("loguniform(lo, hi) with lo > 0")
    if kind == "normal" and not b > 0:
        raise ValueError("normal(mean, sd) with sd > 0")
    if param is not None and kind != "normal" and (a < param.lo or b > param.hi):
        raise ValueError(f"a range within [{param.lo:g}, {param.hi:g}] "
                         f"(the values {param.target} accepts)")
    # draws are clipped to the field's range: a normal reaching past it would pile draws on its
    # ends without a word (normal(0.5, 2) on mem_efficiency put a tenth of them at 0.001)
    if param is not None and kind == "normal" and (a - 2 * b < param.lo or a + 2 * b > param.hi):
        raise ValueError(f"normal(mean, sd) with mean +- 2 sd within [{param.lo:g}, {param.hi:g}] "
                         f"(the values {param.target} accepts), got [{a - 2 * b:g}, {a + 2 * b:g}]")
    return Prior(kind, a, b)


def check_priors(value: Mapping[str, str]) -> str | None:
    """Spec field check of `uncertainty.priors`: known parameters, valid priors."""
    for name, text in value.items():
        if name not in PARAMS:
            import difflib

            near = difflib.get_close_matches(name, PARAMS, n=3)
            hint = f"did you mean {' or '.join(map(repr, near))}?" if near else \
                "the list is in docs/uncertainty.md section 1"
            return f"a known parameter; {name!r} is not one of the {len(PARAMS)} ({hint})"
        try:
            parse_prior(text, PARAMS[name])
        except ValueError as e:
            return f"a valid prior for {name}: {e}"
    return None


def resolved(overrides: Mapping[str, str]) -> dict[str, Prior]:
    """Every parameter's prior: the spec's, else the shipped default."""
    return {n: parse_prior(overrides.get(n, p.default), p) for n, p in PARAMS.items()}
