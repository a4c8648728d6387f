"""An interval of a drawn figure or of a policy delta, and its verdict against the region of
practical equivalence (mtpsim.verdict). numpy-free and light: `mtpsim simulate` words the saved
summary's interval with it (mtpsim.uncertainty.saved) without importing the draws and the
summaries that made it (mtpsim.uncertainty.summary)."""

from __future__ import annotations

import math

from mtpsim.dataclass import dataclass
from mtpsim.verdict import BETTER, WORSE, Rope, higher_is_better, judge, same_program

# kept beside the tabled metrics, not tabled: the acceptance length the model expects on the drawn
# path (no Bernoulli draw noise, RunExtra.expected_acceptance_length), what coverage scores
# against a real run widened by that run's own noise; its name among a draw's figures
EXPECTED_AL = "expected_acceptance_length"
ACCEPTANCE = ("spec_decode_acceptance_length", EXPECTED_AL)  # absolute deltas, one discrepancy


@dataclass(frozen=True, slots=True)
class Interval:
    """A median and the ends of a central interval of draws (or of a policy delta), with what
    a verdict and a summary report beside them."""

    median: float
    lo: float
    hi: float
    p_pos: float = math.nan  # P(value > 0), for deltas
    p_above: float = math.nan  # P(value > +region of practical equivalence), for deltas
    half: float = math.nan  # that region's half-width (% for timings, absolute for acceptance)
    mc_se: float = math.nan  # Monte Carlo SE of the interval's ends (the larger), for deltas
    eff_draws: float = math.nan  # independent plain draws that would give mc_se (RQMC designs)
    control_r2: float = math.nan  # how much of the draws' CDF variance at the ends the control
    # variate explained (the smaller end; mtpsim.uncertainty.controlled), where one was used

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    @property
    def spans_zero(self) -> bool:
        return self.lo < 0 < self.hi

    def to_json(self) -> dict[str, float]:
        out = {"median": self.median, "lo": self.lo, "hi": self.hi, "p_pos": self.p_pos}
        if not math.isnan(self.p_above):
            out.update(p_above_region=self.p_above, region=self.half)
        if not math.isnan(self.mc_se):
            out["mc_se"] = self.mc_se
        if not math.isnan(self.eff_draws):
            out["effective_draws"] = self.eff_draws
        if not math.isnan(self.control_r2):
            out["control_r2"] = self.control_r2
        return out


def region(metric: str, rope: Rope | None = None) -> float:
    """Half-width of `metric`'s region of practical equivalence in summary units (% / absolute)."""
    rope = rope or Rope()
    return rope.acceptance_length if metric in ACCEPTANCE else rope.timing_pct


def rope_of(u) -> Rope:
    """The spec's UncertaintySpec regions as a Rope."""
    return Rope(timing_pct=u.rope_timing_pct, acceptance_length=u.rope_acceptance_length)


def verdict(iv: Interval, policy: str, base: str, metric: str = "output_throughput",
            k: int | None = None, mc_margin: bool = False) -> str:
    """The delta's verdict against its region (the interval's own `half`, else the default);
    `mc_margin`: an end within MC_MARGIN Monte Carlo SEs of a bound cannot tell (mtpsim.verdict)."""
    if k is not None and same_program(policy, base, k):
        return f"same program at k={k}"
    half = iv.half if not math.isnan(iv.half) else region(metric)
    j = judge(iv.lo, iv.hi, half, higher_is_better(metric), iv.mc_se if mc_margin else 0.0)
    return {BETTER: f"{policy} better", WORSE: f"{policy} worse"}.get(j, j)
