"""Side-by-side comparisons of results: sim vs real, and policy A/B with bootstrap CIs.

A/B confidence intervals come from a request-level bootstrap: requests, not tokens, are the
independent units (tokens of one request share a prompt and a context, so their acceptances
are correlated). The placebo control: `share` and `share_recent` compute draft step 0 exactly
as `fresh` does, so the position-0 acceptance difference between such policies is pure
run-to-run noise; its size is the noise floor a real effect on acceptance has to clear.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from mtpsim.dataclass import dataclass
from mtpsim.policies import policies_where
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result
from mtpsim.verdict import Rope, higher_is_better, judge, same_program

# (key, label, unit) of the figures a sim-vs-real comparison covers, in report order.
FIDELITY_METRICS: tuple[tuple[str, str], ...] = (
    ("request_throughput", "Request throughput (req/s)"),
    ("output_throughput", "Output token throughput (tok/s)"),
    ("total_token_throughput", "Total token throughput (tok/s)"),
    ("median_ttft_ms", "Median TTFT (ms)"),
    ("p90_ttft_ms", "P90 TTFT (ms)"),
    ("median_tpot_ms", "Median TPOT (ms)"),
    ("p90_tpot_ms", "P90 TPOT (ms)"),
    ("median_itl_ms", "Median ITL (ms)"),
    ("spec_decode_acceptance_rate", "Acceptance rate (%)"),
    ("spec_decode_acceptance_length", "Acceptance length"),
    ("spec_decode_num_drafts", "Drafts"),
)

# Policies whose draft step 0 is computed exactly as under `fresh` (the placebo pairs).
STEP0_AS_FRESH = frozenset(policies_where(lambda t: t.step0_as_fresh))


@dataclass(frozen=True, slots=True)
class FidelityRow:
    key: str
    label: str
    real: float
    sim: float

    @property
    def error_pct(self) -> float:
        return 100.0 * (self.sim - self.real) / self.real if self.real else math.nan


def _per_position(res: Result) -> list[float]:
    return list(res.get("spec_decode_per_position_acceptance_rates") or [])


def fidelity(real: Result, sim: Result) -> list[FidelityRow]:
    """Rows for every figure both results carry (per-position rates in percent)."""
    rows = [FidelityRow(k, label, float(real.get(k)), float(sim.get(k)))
            for k, label in FIDELITY_METRICS
            if isinstance(real.get(k), int | float) and isinstance(sim.get(k), int | float)]
    for i, (r, s) in enumerate(zip(_per_position(real), _per_position(sim), strict=False)):
        rows.append(FidelityRow(f"pos{i}", f"Pos {i} (%)", 100 * r, 100 * s))
    return rows


def bursts(res: Result) -> int:
    """How many consecutive rounds (each from an empty engine at t=0) a result's requests were
    served in: its pooled rounds (run-real; simulate with workload.rounds), else one stream."""
    return len(res.extra.rounds or []) or 1


# What a simulation must share with the real run it is held against: the model, the drafting and
# the load served (a result's spec, `Experiment.to_dict()`). Runner, label and machine fields may
# differ (the real run's launch settings, a CPU reference run's unused [hardware]).
SAME_SETUP = ("model.preset", "model.name", "speculative.num_speculative_tokens",
              "speculative.index_topk", "workload.num_prompts", "workload.input_len",
              "workload.output_len", "workload.max_concurrency", "workload.request_rate",
              "workload.temperature")


def setup_mismatch(real: Result, sim: Result) -> str | None:
    """The SAME_SETUP fields whose values differ between the two results' specs, e.g.
    "workload.input_len 768 real, 10240 sim" (up to three); None when they agree or a result
    carries no spec (a vLLM bench JSON)."""
    if not real.spec or not sim.spec:
        return None

    def value(spec: dict, key: str) -> object:
        section, _, name = key.partition(".")
        part = spec.get(section)
        return part.get(name) if isinstance(part, dict) else None

    diff = [f"{k} {value(real.spec, k)} real, {value(sim.spec, k)} sim" for k in SAME_SETUP
            if value(real.spec, k) != value(sim.spec, k)]
    if not diff:
        return None
    more = f"; and {len(diff) - 3} more" if len(diff) > 3 else ""
    return (f"the simulation is of other settings than the real run ({'; '.join(diff[:3])}{more}): "
            f"its errors measure that difference, not the simulator; simulate the real run's "
            f"experiment with the same --set")


def workload_mismatch(real: Result, sim: Result) -> str | None:
    """Why a simulation does not describe the real run's workload (None when it does)."""
    if (other := setup_mismatch(real, sim)) is not None:
        return other
    r, s = bursts(real), bursts(sim)
    if r == s:
        return None
    n = real.get("completed") or len(real.requests or []) or "the"

    def served(k: int) -> str:
        return "the one stream" if k == 1 else f"{k} rounds, each from an empty engine at t=0"

    return (f"the real run served its {n} requests as {served(r)}, the simulation as {served(s)}; "
            f"timings differ by design: simulate with --set workload.rounds={r}")


def mean_abs_pct_error(rows: Sequence[FidelityRow]) -> float:
    errs = [abs(r.error_pct) for r in rows if not math.isnan(r.error_pct)]
    return float(np.mean(errs)) if errs else math.nan


@dataclass(frozen=True, slots=True)
class ABRow:
    """B minus A for one metric; CI bounds are NaN when only aggregates are available."""

    key: str
    label: str
    a: float
    b: float
    ci_low: float = math.nan
    ci_high: float = math.nan
    acceptance: bool = False  # an acceptance figure: the placebo noise floor applies
    verdict: str = ""  # mtpsim.verdict: better / worse / no practical difference / cannot tell
    p_above: float = math.nan  # P(delta > +region)
    p_below: float = math.nan  # P(delta < -region)
    ci_pct: bool = False  # the CI is in % of A (paired rounds), not in the metric's units
    rounds: int = 0  # rounds the paired CI rests on (0: none)
    paired_mean_pct: float = math.nan  # mean of the per-round deltas, % of A (the CI's centre)

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def rel_pct(self) -> float:
        return 100.0 * self.delta / self.a if self.a else math.nan

    @property
    def has_ci(self) -> bool:
        return not math.isnan(self.ci_low)

    @property
    def significant(self) -> bool | None:
        """CI excludes zero; None without a CI."""
        return (self.ci_low > 0 or self.ci_high < 0) if self.has_ci else None


@dataclass(frozen=True, slots=True)
class ABReport:
    policy_a: str
    policy_b: str
    rows: list[ABRow]
    # Placebo noise floor per acceptance metric, in the metric's own units (None: no placebo).
    noise_floor: dict[str, float] | None
    num_requests: tuple[int, int] | None
    same_program_k: int | None = None  # A and B are the same program at this k: not compared
    rope: Rope = Rope()

    def within_noise(self, row: ABRow) -> bool | None:
        """An acceptance delta that does not clear the placebo noise floor."""
        if self.noise_floor is None or row.key not in self.noise_floor or row.key == "pos0":
            return None
        return abs(row.delta) <= self.noise_floor[row.key]


def placebo_noise_floor(rows: Sequence[ABRow]) -> dict[str, float] | None:
    """Noise floors from the position-0 placebo.

    The position-0 floor is |delta pos0| in points (or, with a bootstrap CI, its far edge if that
    is larger). Position i scales it by the binomial spread sqrt(p(1-p)) of its own rate; the
    acceptance rate (the mean of the marginal rates) takes the mean of those floors and the
    acceptance length (1 + their sum) the sum, as if the positions' noise were fully correlated:
    a deliberately generous floor.
    """
    by_key = {r.key: r for r in rows}
    pos0 = by_key.get("pos0")
    if pos0 is None:
        return None
    f0 = abs(pos0.delta)
    if pos0.has_ci:
        f0 = max(f0, abs(pos0.ci_low), abs(pos0.ci_high))

    def spread(p_pct: float) -> float:
        p = min(max(p_pct / 100.0, 1e-6), 1 - 1e-6)
        return math.sqrt(p * (1 - p))

    floors: dict[str, float] = {}
    i = 0
    while (r := by_key.get(f"pos{i}")) is not None:
        floors[r.key] = f0 * spread((r.a + r.b) / 2) / spread((pos0.a + pos0.b) / 2)
        i += 1
    floors["spec_decode_acceptance_rate"] = float(np.mean(list(floors.values())))
    floors["spec_decode_acceptance_length"] = sum(v for k, v in floors.items() if k.startswith("pos")) / 100
    return floors


# Request-level statistics, vectorised over bootstrap replicates: arrays are [B, n].
def _arrays(reqs: Sequence[RequestRecord], npos: int) -> dict[str, np.ndarray]:
    per_pos = np.zeros((len(reqs), npos))
    for j, r in enumerate(reqs):
        per_pos[j, : min(npos, len(r.accepted_per_pos))] = r.accepted_per_pos[:npos]
    tpot = np.array([r.tpot_s if r.tpot_s is not None else np.nan for r in reqs]) * 1000
    return {
        "drafts": np.array([r.num_drafts for r in reqs], float),
        "draft_tokens": np.array([r.num_draft_tokens for r in reqs], float),
        "accepted": np.array([r.num_accepted_tokens for r in reqs], float),
        "per_pos": per_pos,
        "tpot": tpot,
        "ttft": np.array([r.ttft_s for r in reqs]) * 1000,
        "e2el": np.array([r.e2el_s for r in reqs]) * 1000,
    }


Stat = Callable[[dict[str, np.ndarray], np.ndarray], np.ndarray]


def _ratio(num: str, den: str, scale: float = 1.0, offset: float = 0.0) -> Stat:
    return lambda d, idx: offset + scale * d[num][idx].sum(-1) / d[den][idx].sum(-1)


def _pos(i: int) -> Stat:
    return lambda d, idx: 100.0 * d["per_pos"][idx, i].sum(-1) / d["drafts"][idx].sum(-1)


def _median(name: str) -> Stat:
    return lambda d, idx: np.nanmedian(d[name][idx], axis=-1)


def _mean(name: str) -> Stat:
    return lambda d, idx: np.nanmean(d[name][idx], axis=-1)


def _request_stats(npos: int) -> list[tuple[str, str, Stat, bool]]:
    stats: list[tuple[str, str, Stat, bool]] = [
        ("spec_decode_acceptance_length", "Acceptance length", _ratio("accepted", "drafts", 1, 1), True),
        ("spec_decode_acceptance_rate", "Acceptance rate (%)", _ratio("accepted", "draft_tokens", 100), True),
    ]
    stats += [(f"pos{i}", f"Pos {i} (%)", _pos(i), True) for i in range(npos)]
    stats += [
        ("median_tpot_ms", "Median TPOT (ms)", _median("tpot"), False),
        ("mean_tpot_ms", "Mean TPOT (ms)", _mean("tpot"), False),
        ("median_ttft_ms", "Median TTFT (ms)", _median("ttft"), False),
        ("mean_e2el_ms", "Mean E2EL (ms)", _mean("e2el"), False),
    ]
    return stats


def _aggregate_rows(a: Result, b: Result) -> list[ABRow]:
    rows = [ABRow(k, label, float(a.get(k)), float(b.get(k)),
                  acceptance=k.startswith("spec_decode_acceptance"))
            for k, label in FIDELITY_METRICS
            if isinstance(a.get(k), int | float) and isinstance(b.get(k), int | float)]
    for i, (x, y) in enumerate(zip(_per_position(a), _per_position(b), strict=False)):
        rows.append(ABRow(f"pos{i}", f"Pos {i} (%)", 100 * x, 100 * y, acceptance=True))
    return rows


NO_ROUNDS = "cannot tell (no rounds)"


def is_timing(key: str) -> bool:
    return "throughput" in key or key.endswith("_ms") or key == "duration"


def _k_of(res: Result) -> int | None:
    k = (res.spec.get("speculative") or {}).get("num_speculative_tokens") if res.spec else None
    return int(k) if isinstance(k, int) else (len(_per_position(res)) or None)


def _timing_row(row: ABRow, a: Result, b: Result, rope: Rope, normalise: bool | str, level: float) -> ABRow:
    """A timing figure is judged only from paired rounds: a request-level bootstrap of two runs
    made one after the other cannot tell the policies' effect from the machine's drift."""
    from mtpsim.paired import paired_delta

    pd = paired_delta(a, b, row.key, rope=rope, level=level, normalise=normalise)
    if pd is None:
        return replace(row, ci_low=math.nan, ci_high=math.nan, p_above=math.nan, p_below=math.nan,
                       verdict=NO_ROUNDS)
    return replace(row, ci_low=pd.lo, ci_high=pd.hi, ci_pct=True, p_above=pd.p_above,
                   p_below=pd.p_below, verdict=pd.verdict, rounds=pd.n, paired_mean_pct=pd.mean)


def ab_compare(a: Result, b: Result, *, num_boot: int = 2000, seed: int = 0,
               level: float = 0.95, rope: Rope | None = None, normalise: bool | str = False) -> ABReport:
    """B vs A. Acceptance figures: request-level bootstrap CIs (requests are the units; acceptance
    does not depend on timing). Timing figures: paired per-round deltas (mtpsim.paired) when both
    results hold interleaved rounds, otherwise no verdict. Without per-request records, the
    aggregate deltas with the placebo noise floor only."""
    rope = rope or Rope()
    pa, pb = a.policy or "A", b.policy or "B"
    rows = _aggregate_rows(a, b)
    n = None
    if a.requests and b.requests:
        npos = min(len(_per_position(a)), len(_per_position(b)))
        da, db = _arrays(a.requests, npos), _arrays(b.requests, npos)
        rng = np.random.default_rng(seed)
        ia = rng.integers(0, len(a.requests), (num_boot, len(a.requests)))
        ib = rng.integers(0, len(b.requests), (num_boot, len(b.requests)))
        full_a, full_b = np.arange(len(a.requests)), np.arange(len(b.requests))
        lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
        boot = []
        for key, label, stat, acc in _request_stats(npos):
            deltas = stat(db, ib) - stat(da, ia)
            lo, hi = np.nanpercentile(deltas, [lo_q, hi_q])
            half, _ = rope.half_width(key)
            boot.append(ABRow(key, label, float(stat(da, full_a)), float(stat(db, full_b)),
                              float(lo), float(hi), acc,
                              verdict=judge(float(lo), float(hi), half, higher_is_better(key)),
                              p_above=float(np.nanmean(deltas > half)),
                              p_below=float(np.nanmean(deltas < -half))))
        keys = {r.key for r in boot}
        rows = boot + [r for r in rows if r.key not in keys]
        n = (len(a.requests), len(b.requests))
    rows = [_timing_row(r, a, b, rope, normalise, level) if is_timing(r.key) else r for r in rows]
    floor = placebo_noise_floor(rows) if pa in STEP0_AS_FRESH and pb in STEP0_AS_FRESH else None
    k = _k_of(a) or _k_of(b)
    same = k if k is not None and same_program(pa, pb, k) and pa != pb else None
    return ABReport(pa, pb, rows, floor, n, same, rope)
