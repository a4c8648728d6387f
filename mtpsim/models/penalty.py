"""The overlap -> acceptance link ("penalty"): how much of a draft's conditional acceptance a
reused selection keeps, a_i' = a_i * keep, where o is the overlap at draft step s = i >= 1.

Each form is a class (as each policy is): its parameters, its kappa at a draft step, its fit
and its JSON in a calibration file (`acceptance.<field>`). `acceptance.penalty` in the spec
names one (`FORMS`); `kappa_step` is the default (v20's registered penalty comparison;
docs/uncertainty.md §33), `kappa_lk` was until then.
- `NoPenalty` (`none`): zero penalty, keep = 1 whatever the overlap (kappa -> infinity, and 1
  even at overlap 0): a reused selection keeps every draft's conditional acceptance, so a reuse
  policy's acceptance is fresh's. No parameters, nothing to fit, nothing stored in a
  calibration file (it reads from any file). It is the zero-penalty baseline the registered
  penalty comparisons score the other forms against (benchmarks/penalty_log_score.py; v14 and
  v15 in docs/uncertainty.md: no form beat it; v16: all three did, `kappa_lk` the most).
- `Kappa` (the first form): keep = 1 - (1 - o) ** kappa, one kappa at every draft step. A draft
  survives if at least one of kappa equally likely evidence positions stays selected.
- `KappaStep`: keep = 1 - (1 - o) ** kappa_s, a kappa per draft step. At step s the reused row
  misses the s positions drafted since it was computed (the most recent ones), so the same set
  overlap can cost more at a later step; one kappa could not follow the measured penalty of
  ~1-4 points at position 1 and ~7-12 at positions 2-3 (docs/calibration.md). Parametric (spec):
  kappa_s = critical_entries * s ** critical_step_exponent (exponent 0: the `kappa` form).
  Fitted (calibration): one kappa_s per step, against the fitted overlap curve at the event's
  context, which is the overlap the simulator feeds in.
- `KappaLk`: kappa_s * ((L / K) / r_ref) ** gamma, the per-step kappa scaled by the context's
  ratio to the top-k. Set overlap counts every selected entry alike, but as L / K grows the
  entries the reused row loses are more and more the low-score tail, which carries little
  attention: acceptance then loses less than the set overlap says (the calibration runs show a
  flat position-1 rate over contexts 300-1,900 where the overlap curve falls; held-out runs at
  top-32 and 4 K show ~0 penalty where kappa_step predicts 3-6 points). gamma > 0 says so.
  The default: fitted on five calibration seeds it is the only form inside every held-out CI of
  the v9 runs (docs/calibration.md); fitted on one seed it extrapolated worse than kappa_step.
  Parametric (spec): kappa_s = critical_entries * s ** critical_step_exponent *
  ((L / K) / LK_REF) ** critical_lk_exponent. Fitted: {kappa_steps, exponent, ratio_ref}
  (ratio_ref the geometric mean L / K of the fitted events).

A fit (`fit`) maximises the likelihood a calibration hands it as `HeldEvents`
(mtpsim.calibration.fit): the reuse policies' events with the acceptance curves and the request
spread held fixed.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mtpsim.dataclass import dataclass

if TYPE_CHECKING:
    from mtpsim.calibration.fit import HeldEvents

LK_REF = 16.0  # the parametric form's reference L / K

Num = float | np.ndarray


def keep_factor(overlap: Num, kappa: Num) -> Num:
    """Share of a draft's acceptance a selection with `overlap` keeps: 1 - (1 - o) ** kappa."""
    return 1.0 - (1.0 - overlap) ** kappa


class Penalty(ABC):
    """One form's parameters. `kappa(step, ratio)` at draft step >= 1 and L / K `ratio`."""

    name: ClassVar[str]
    field: ClassVar[str]  # the calibration's acceptance key that holds a fitted one ("": none)

    @abstractmethod
    def kappa(self, step: int, ratio: Num = 1.0) -> Num: ...

    def keep(self, overlap: Num, step: int, ratio: Num = 1.0) -> Num:
        return keep_factor(overlap, self.kappa(step, ratio))

    @abstractmethod
    def to_json(self) -> Any: ...

    @classmethod
    @abstractmethod
    def from_json(cls, obj: Any, steps: int) -> Penalty:
        """The form from its calibration field (`steps` draft steps 1..k-1); ValueError naming
        what was expected."""

    @classmethod
    @abstractmethod
    def parametric(cls, kappa: float, step_exponent: float = 0.0,
                   lk_exponent: float = 0.0) -> Penalty:
        """The spec's form (acceptance.critical_entries and the exponents)."""


def _number(x: Any, lo: float, hi: float) -> bool:
    return (isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            and lo < x <= hi)


@dataclass(frozen=True, slots=True)
class Kappa(Penalty):
    """One kappa for every draft step."""

    value: float

    name: ClassVar[str] = "kappa"
    field: ClassVar[str] = "kappa"

    def kappa(self, step: int, ratio: Num = 1.0) -> Num:
        return self.value

    def to_json(self) -> float:
        return self.value

    @classmethod
    def from_json(cls, obj: Any, steps: int) -> Kappa:
        if not _number(obj, 0.0, 1e6):
            raise ValueError("expected a number in (0, 1e6], or null")
        return cls(float(obj))

    @classmethod
    def parametric(cls, kappa: float, step_exponent: float = 0.0,
                   lk_exponent: float = 0.0) -> Kappa:
        return cls(kappa)

    @classmethod
    def fit(cls, held: HeldEvents) -> Kappa:
        """ML kappa over the events' own overlaps."""
        from scipy.optimize import minimize_scalar

        def f(log_kappa: float) -> float:
            return held.nll(keep_factor(held.overlap, math.exp(log_kappa)))

        lo, hi = math.log(0.5), math.log(1e4)
        grid = np.linspace(lo, hi, 25)  # (1 - o) ** kappa flattens for large kappa: bracket first
        best = int(np.argmin([f(g) for g in grid]))
        sol = minimize_scalar(f, bounds=(grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]),
                              method="bounded")
        return cls(math.exp(float(sol.x)))


@dataclass(frozen=True, slots=True)
class KappaStep(Penalty):
    """Fitted: `steps` (kappa per draft step 1..k-1; steps beyond reuse the last, an
    extrapolation). Parametric: `base` * s ** `step_exponent`."""

    steps: tuple[float, ...] = ()
    base: float = 0.0
    step_exponent: float = 0.0

    name: ClassVar[str] = "kappa_step"
    field: ClassVar[str] = "kappa_steps"

    def kappa(self, step: int, ratio: Num = 1.0) -> Num:
        if self.steps:
            return self.steps[min(max(step, 1), len(self.steps)) - 1]
        return self.base * float(max(step, 1)) ** self.step_exponent

    def to_json(self) -> list[float]:
        return list(self.steps)

    @classmethod
    def from_json(cls, obj: Any, steps: int) -> KappaStep:
        if not (isinstance(obj, list) and len(obj) == steps and all(_number(x, 0.0, 1e6) for x in obj)):
            raise ValueError(f"expected {steps} numbers in (0, 1e6] (one per draft step 1..k-1), "
                             "or null")
        return cls(tuple(float(x) for x in obj))

    @classmethod
    def parametric(cls, kappa: float, step_exponent: float = 0.0,
                   lk_exponent: float = 0.0) -> KappaStep:
        return cls((), kappa, step_exponent)

    @classmethod
    def fit(cls, held: HeldEvents) -> KappaStep | None:
        """ML kappa per draft step 1..k-1 against the events' overlaps (the fitted curve's). A
        step without events takes the previous step's kappa; None without any event."""
        from scipy.optimize import minimize

        k, o = held.k, held.overlap
        steps = held.steps()
        lo, hi = math.log(0.05), math.log(1e4)

        def f(log_kappas: np.ndarray) -> float:
            kap = np.ones(k)
            kap[steps] = np.exp(log_kappas)
            return held.nll(keep_factor(o, kap[held.pos]))

        if not steps:
            return None
        # (1 - o) ** kappa flattens for large kappa: a grid per step (the others at the grid's best
        # common value) brackets each before the joint bounded fit
        grid = np.linspace(lo, hi, 13)  # steps of ~0.9 in ln kappa: enough to bracket
        common = grid[int(np.argmin([f(np.full(len(steps), g)) for g in grid]))]
        start = np.full(len(steps), common)
        for j in range(len(steps)):
            trial = [f(np.concatenate([start[:j], [g], start[j + 1:]])) for g in grid]
            start[j] = grid[int(np.argmin(trial))]
        sol = minimize(f, start, method="L-BFGS-B", bounds=[(lo, hi)] * len(steps))
        return cls(tuple(_every_step(dict(zip(steps, np.exp(sol.x).tolist(), strict=True)), k,
                                     float(np.exp(common)))))


LK_EXPONENT_BOUND = 5.0  # |gamma| a kappa_lk fit may reach; at it the data did not pin gamma


@dataclass(frozen=True, slots=True)
class KappaLk(Penalty):
    """Fitted: `steps`, `exponent` (gamma) and `ratio_ref`. Parametric: `base` * s **
    `step_exponent` * ((L / K) / LK_REF) ** `exponent`."""

    steps: tuple[float, ...] = ()
    exponent: float = 0.0
    ratio_ref: float = LK_REF
    base: float = 0.0
    step_exponent: float = 0.0

    name: ClassVar[str] = "kappa_lk"
    field: ClassVar[str] = "kappa_lk"

    def kappa(self, step: int, ratio: Num = 1.0) -> Num:
        s = max(step, 1)
        per_step = (self.steps[min(s, len(self.steps)) - 1] if self.steps
                    else self.base * float(s) ** self.step_exponent)
        return per_step * (np.asarray(ratio, float) / self.ratio_ref) ** self.exponent

    def at_bound(self) -> bool:
        """A fit whose gamma sits at the fit's bound: the events' L / K range did not pin it."""
        return bool(self.steps) and abs(self.exponent) >= LK_EXPONENT_BOUND - 1e-6

    def to_json(self) -> dict[str, Any]:
        return {"kappa_steps": list(self.steps), "exponent": self.exponent,
                "ratio_ref": self.ratio_ref}

    @classmethod
    def from_json(cls, obj: Any, steps: int) -> KappaLk:
        ok = isinstance(obj, dict)
        ks = obj.get("kappa_steps") if ok else None
        ok = ok and isinstance(ks, list) and len(ks) == steps and all(_number(x, 0.0, 1e6) for x in ks)
        ok = ok and _number(obj.get("exponent"), -math.inf, 10.0) and abs(obj["exponent"]) <= 10
        ok = ok and _number(obj.get("ratio_ref"), 0.0, 1e6)
        if not ok:
            raise ValueError(f"expected {{\"kappa_steps\": {steps} numbers in (0, 1e6], "
                             "\"exponent\": a number in [-10, 10], \"ratio_ref\": a number in "
                             "(0, 1e6]}, or null")
        return cls(tuple(float(x) for x in ks), float(obj["exponent"]), float(obj["ratio_ref"]))

    @classmethod
    def parametric(cls, kappa: float, step_exponent: float = 0.0,
                   lk_exponent: float = 0.0) -> KappaLk:
        return cls((), lk_exponent, LK_REF, kappa, step_exponent)

    @classmethod
    def fit(cls, held: HeldEvents, start: KappaStep | None) -> KappaLk | None:
        """ML kappa per draft step and one exponent gamma of L / K (r_ref the events'
        geometric-mean L / K), started from the kappa_step fit `start`; None without events."""
        from scipy.optimize import minimize

        k, o = held.k, held.overlap
        steps = held.steps()
        if not steps or start is None or not start.steps:
            return None
        used = (held.pos >= 1) & (o < 1.0)
        ratio_ref = float(np.exp(np.mean(np.log(held.ratio[used]))))
        lr = np.log(held.ratio / ratio_ref)
        lo, hi = math.log(0.05), math.log(1e4)

        def f(theta: np.ndarray) -> float:
            kap = np.ones(k)
            kap[steps] = np.exp(theta[:-1])
            return held.nll(keep_factor(o, kap[held.pos] * np.exp(theta[-1] * lr)))

        log_start = np.log(np.clip([start.steps[s - 1] for s in steps], 0.06, 9e3))
        # the likelihood need not be convex in gamma: a few starts
        best = min((minimize(f, np.append(log_start, g0), method="L-BFGS-B",
                             bounds=[(lo, hi)] * len(steps) + [(-LK_EXPONENT_BOUND, LK_EXPONENT_BOUND)])
                    for g0 in (0.0, 1.0, -1.0)), key=lambda sol: sol.fun)
        kappas = _every_step(dict(zip(steps, np.exp(best.x[:-1]).tolist(), strict=True)), k,
                             float(np.exp(best.x[0])))
        return cls(tuple(kappas), float(best.x[-1]), ratio_ref)


@dataclass(frozen=True, slots=True)
class NoPenalty(Penalty):
    """Zero penalty: keep = 1 at every overlap, step and L / K. No parameters; no calibration
    field (`field` ""): a calibration file gives it whatever it holds."""

    name: ClassVar[str] = "none"
    field: ClassVar[str] = ""

    def kappa(self, step: int, ratio: Num = 1.0) -> Num:
        """The limit kappa -> infinity; `keep` is exactly 1 (overlap 0 included): use it."""
        return math.inf

    def keep(self, overlap: Num, step: int, ratio: Num = 1.0) -> Num:
        return np.ones(np.broadcast(np.asarray(overlap, float), np.asarray(ratio, float)).shape)

    def to_json(self) -> None:
        return None

    @classmethod
    def from_json(cls, obj: Any, steps: int) -> NoPenalty:
        return cls()

    @classmethod
    def parametric(cls, kappa: float, step_exponent: float = 0.0,
                   lk_exponent: float = 0.0) -> NoPenalty:
        return cls()

    @classmethod
    def fit(cls, held: HeldEvents | None = None) -> NoPenalty:
        """Nothing to fit."""
        return cls()


def _every_step(fitted: dict[int, float], k: int, first: float) -> list[float]:
    """kappa for draft steps 1..k-1: a step without events takes the previous step's
    (`first` before any)."""
    out: list[float] = []
    for s in range(1, k):
        out.append(fitted.get(s, out[-1] if out else first))
    return out


FORMS: dict[str, type[Penalty]] = {f.name: f for f in (Kappa, KappaStep, KappaLk, NoPenalty)}
PENALTIES = tuple(FORMS)
PENALISING = tuple(n for n, f in FORMS.items() if f is not NoPenalty)  # forms with a penalty
DEFAULT_PENALTY = KappaStep.name  # the spec's default (acceptance.penalty)


def parametric(name: str, kappa: float, step_exponent: float = 0.0,
               lk_exponent: float = 0.0) -> Penalty:
    """The spec's form `name` with its parameters."""
    return FORMS[name].parametric(kappa, step_exponent, lk_exponent)
