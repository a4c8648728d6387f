"""The calibration file (format `mtpsim-calibration`, version 1): JSON, written atomically.

    {"format": "mtpsim-calibration", "version": 1, "mtpsim_version": "0.1.0", "engine": "reference",
     "created": "2026-11-29T10:40:00Z", "sources": [{"path": ..., "policy": "fresh", "k": 4, ...}],
     "acceptance": {"context_ref": 700.0, "base": [[b0, b1], ...], "kappa": 40.0, "sigma": 0.8,
                    "kappa_steps": [4.5, 4.0, 3.2],
                    "policies": {"target_share": [[b0, b1], ...]}, "report": {...}},
     "overlap": {"policies": {"share": [[u0, u1], ...]}, "report": {...}},
     "cost": {"gap_s": 8e-05, "indexer_keys": "own", "phases": {"verify": {"features": [...], "coef": [...],
              "r2": 0.97, "rmse_s": 0.001, "n": 900}, ...}, "report": {...}},
     "ranges": {"context_len": [300, 1500], "num_reqs": [1, 8], "k": [4], "index_topk": [64]},
     "workload_shift": {"decode_sd": 0.12, "prefill_sd": 0.06, "source": "leave-one-kind-out",
                        "note": "...", "kinds": {"calibrate-stream": {"decode": 0.93, ...}, ...}}}

Models (mtpsim.models): conditional acceptance at draft position i and context L is
`sigmoid(b0_i + b1_i * ln(L / context_ref) + u) * (1 - (1 - o_i) ** kappa)`, u ~ N(0, sigma) per
request (top-k enters only through the overlap: one calibrated top-k says nothing more), o_i the
policy's top-k overlap at draft step i (1 for `fresh` and at step 0); with `acceptance.penalty =
"kappa_step"` the simulator uses `kappa_steps[i - 1]` (one kappa per draft step >= 1, optional:
files fitted before it lack it) in place of `kappa`, and with `"kappa_lk"` `kappa_lk.kappa_steps[i -
1] * ((L / K) / kappa_lk.ratio_ref) ** kappa_lk.exponent`; policies
listed under `acceptance.policies` use their own [b0, b1] instead. Overlap at draft step s >= 1:
agreement beyond chance `c = sigmoid(u0_s + u1_s * ln(L / K))`, fed through the formulas of
mtpsim.models.overlap. Step cost: each phase is `coef . features` (seconds), plus `gap_s` per step;
`cost.indexer_keys` (optional, default "own"): "padded" counts every decoding and drafting request's
indexer keys at its batch's longest context, in the fit and in the pricing (mtpsim.models.cost).
`workload_shift` (optional; mtpsim.calibration.shift): the step cost's log error on a workload
kind the fit did not see, measured by leaving each kind out, or a stated prior; absent = the prior.
"""

from __future__ import annotations

import math
from dataclasses import asdict, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim import __version__
from mtpsim.calibration.shift import PRIOR, WorkloadShift, shift_from_json
from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError
from mtpsim.fileio import atomic_write_json, finite_json
from mtpsim.inputs import MiB, loads_json, read_text
from mtpsim.result import PHASES

if TYPE_CHECKING:
    from mtpsim.models.penalty import Penalty

FORMAT = "mtpsim-calibration"
VERSION = 1


class CalibrationError(UserError):
    """A calibration file is missing, malformed, or lacks what a simulation needs."""


@dataclass(frozen=True, slots=True)
class AcceptanceFit:
    context_ref: float  # geometric mean context of the fitted events
    base: list[list[float]]  # [k][b0, b1]: overlap-1 conditional acceptance per position
    kappa: float | None  # overlap -> acceptance; None when no trace of a reuse policy had overlap
    sigma: float  # between-request spread (logit SD)
    policies: dict[str, list[list[float]]] = field(default_factory=dict)  # fitted on their own
    report: dict[str, Any] = field(default_factory=dict)
    # penalty "kappa_step": kappa per draft step 1..k-1, fitted against the fitted overlap curve
    kappa_steps: list[float] | None = None
    # penalty "kappa_lk": {"kappa_steps": [k-1], "exponent": gamma, "ratio_ref": r} (same curve)
    kappa_lk: dict[str, Any] | None = None

    def penalty(self, name: str) -> Penalty | None:
        """The fitted penalty form `name` (mtpsim.models.penalty), None when this file has none
        (no trace of a reuse policy, or a file fitted before the form). Each form's JSON is the
        value under its `field`; a form without one (`none`) is given by every file."""
        from mtpsim.models.penalty import FORMS

        form = FORMS[name]
        if not form.field:  # nothing fitted, nothing stored
            return form.from_json(None, len(self.base) - 1)
        raw = getattr(self, form.field)
        return None if raw is None else form.from_json(raw, len(self.base) - 1)


@dataclass(frozen=True, slots=True)
class OverlapFit:
    policies: dict[str, list[list[float]]]  # policy -> [k-1][u0, u1] for draft steps 1..k-1
    report: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PhaseFit:
    features: list[str]
    coef: list[float]  # seconds per unit of each feature
    r2: float
    rmse_s: float
    n: int


@dataclass(frozen=True, slots=True)
class CostFit:
    phases: dict[str, PhaseFit]
    gap_s: float  # host time between engine steps (the serving loop), per step
    report: dict[str, Any] = field(default_factory=dict)
    # how the indexer features count keys (mtpsim.models.cost.INDEXER_KEYS): "own" (each request's
    # context) or "padded" (the batch's longest); a file without the field was fitted as "own"
    indexer_keys: str = "own"


@dataclass(frozen=True, slots=True)
class Calibration:
    engine: str
    sources: list[dict[str, Any]]
    acceptance: AcceptanceFit
    overlap: OverlapFit
    cost: CostFit
    ranges: dict[str, list[float]]
    created: str = ""
    mtpsim_version: str = __version__
    machine: dict[str, Any] = field(default_factory=dict)  # where the traces ran (CPU/GPU, threads)
    bootstrap: list[dict[str, Any]] = field(default_factory=list)  # refits: mtpsim.uncertainty
    workload_shift: WorkloadShift | None = None  # None: a file fitted before the term
    path: str = "<memory>"  # where it was read from (not written)

    @property
    def shift(self) -> WorkloadShift:
        """The workload-shift SDs --uncertainty draws with: the file's, else the prior."""
        if self.workload_shift is not None:
            return self.workload_shift
        return WorkloadShift(PRIOR.decode_sd, PRIOR.prefill_sd, PRIOR.source,
                             f"{self.path} records no workload-shift measurement (fitted before "
                             f"the term); {PRIOR.note}")

    @property
    def policies(self) -> set[str]:
        return {str(s["policy"]) for s in self.sources}

    def to_json(self) -> dict[str, Any]:
        out = {"format": FORMAT, "version": VERSION, **asdict(self)}
        out.pop("path")
        return finite_json(out)

    def write(self, path: str | Path) -> None:
        atomic_write_json(path, self.to_json())



MAX_GAP_S = 10.0  # host time between two engine steps; more is a unit error, not a server


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


class _Reader:
    """Typed field access that names the file and the field on every problem."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def fail(self, where: str, expected: str) -> CalibrationError:
        return CalibrationError(self.source, where, expected)

    def get(self, obj: Any, key: str, where: str) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            raise self.fail(f"{where}{key}", "missing")
        return obj[key]

    def num(self, obj: Any, key: str, where: str, optional: bool = False) -> float | None:
        v = self.get(obj, key, where)
        if v is None and optional:
            return None
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
            raise self.fail(f"{where}{key}", f"expected a number, got {v!r}")
        return float(v)

    def table(self, obj: Any, key: str, where: str) -> dict[str, Any]:
        v = self.get(obj, key, where)
        if not isinstance(v, dict):
            raise self.fail(f"{where}{key}", f"expected an object, got {v!r}")
        return v

    def report(self, obj: dict[str, Any], where: str) -> dict[str, Any]:
        v = obj.get("report")
        if v is not None and not isinstance(v, dict):
            raise self.fail(f"{where}report", f"expected an object, got {_short(v)}")
        return dict(v or {})

    def rows(self, v: Any, where: str, width: int) -> list[list[float]]:
        ok = isinstance(v, list) and len(v) <= 64 and all(
            isinstance(r, list) and len(r) == width
            and all(isinstance(x, int | float) and not isinstance(x, bool) and abs(x) <= 1e6 for x in r)
            for r in v)
        if not ok:
            raise self.fail(where, f"expected at most 64 [{', '.join(['number'] * width)}] rows "
                            "(|number| <= 1e6)")
        return [[float(x) for x in r] for r in v]


def calibration_from_json(obj: Any, source: str | Path = "<json>") -> Calibration:
    """A calibration file's JSON, checked field by field (the first bad field is the error)."""
    rd = _Reader(Path(source))
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise rd.fail("format", f"expected \"{FORMAT}\" (a file written by mtpsim simulate "
                      "--trace ... --save-calibration)")
    if obj.get("version") != VERSION:
        raise rd.fail("version", f"expected {VERSION}, got {obj.get('version')!r}")
    acc = rd.table(obj, "acceptance", "")
    acceptance = _acceptance_fields(rd, acc)
    overlap = _overlap(rd, obj, len(acceptance["base"]))
    cost = rd.table(obj, "cost", "")
    phases = _phases(rd, rd.table(cost, "phases", "cost."))
    gap = rd.num(cost, "gap_s", "cost.")
    if gap is None or not 0 <= gap <= MAX_GAP_S:
        raise rd.fail("cost.gap_s", f"expected seconds between engine steps in 0..{MAX_GAP_S:g}")
    sources = rd.get(obj, "sources", "")
    if not isinstance(sources, list) or not sources or not all(
            isinstance(s, dict) and isinstance(s.get("policy"), str) for s in sources):
        raise rd.fail("sources", "expected a non-empty list of {path, policy, ...} objects")
    ranges = _ranges(rd, obj)
    keys = _indexer_keys(rd, cost)
    return Calibration(
        engine=str(obj.get("engine", "")), sources=sources,
        acceptance=AcceptanceFit(**acceptance, report=rd.report(acc, "acceptance.")),
        overlap=overlap, cost=CostFit(phases, float(gap), rd.report(cost, "cost."), keys),
        ranges={str(k): list(v) for k, v in ranges.items() if isinstance(v, list)},
        created=str(obj.get("created", "")), mtpsim_version=str(obj.get("mtpsim_version", "?")),
        machine=dict(obj.get("machine") or {}) if isinstance(obj.get("machine"), dict) else {},
        bootstrap=_bootstrap(rd, obj.get("bootstrap")),
        workload_shift=shift_from_json(obj.get("workload_shift"), rd.fail), path=str(source))


def _acceptance_fields(rd: _Reader, acc: dict[str, Any]) -> dict[str, Any]:
    """The acceptance fit's fields but its report: base rows per draft position, sigma, kappa,
    the penalty forms' fits, the per-policy rows and the reference context."""
    base = rd.rows(rd.get(acc, "base", "acceptance."), "acceptance.base", 2)
    if not base:
        raise rd.fail("acceptance.base", "expected at least one draft position")
    sigma = rd.num(acc, "sigma", "acceptance.")
    kappa = rd.num(acc, "kappa", "acceptance.", optional=True)
    if sigma is None or not 0 <= sigma <= 10 or (kappa is not None and not 0 < kappa <= 1e6):
        raise rd.fail("acceptance.sigma", "expected sigma in [0, 10] and kappa in (0, 1e6] "
                      "(or null)")
    from mtpsim.models.penalty import KappaLk, KappaStep

    fitted: dict[str, Any] = {}
    for form in (KappaStep, KappaLk):  # optional: files fitted before a form lack it
        raw = acc.get(form.field)
        try:
            fitted[form.field] = None if raw is None else form.from_json(raw, len(base) - 1).to_json()
        except ValueError as e:
            raise rd.fail(f"acceptance.{form.field}", f"{e}; got {_short(raw)}") from None
    pol = rd.table(acc, "policies", "acceptance.")
    policies = {str(p): rd.rows(v, f"acceptance.policies.{p}", 2) for p, v in pol.items()}
    ctx_ref = rd.num(acc, "context_ref", "acceptance.")
    if ctx_ref is None or not 1 <= ctx_ref <= 1e9:  # a geometric mean of contexts: >= 1 token
        raise rd.fail("acceptance.context_ref", "expected a number of tokens in 1..1e9")
    k = len(base)
    for p, rows in policies.items():
        if len(rows) != k:
            raise rd.fail(f"acceptance.policies.{p}", f"expected {k} rows (one per draft position, "
                          f"as acceptance.base), got {len(rows)}")
    return {"context_ref": float(ctx_ref), "base": base, "kappa": kappa, "sigma": float(sigma),
            "policies": policies, "kappa_steps": fitted[KappaStep.field],
            "kappa_lk": fitted[KappaLk.field]}


def _overlap(rd: _Reader, obj: dict[str, Any], k: int) -> OverlapFit:
    """The overlap fit: per policy, one row per draft step 1..k-1."""
    ov = rd.table(obj, "overlap", "")
    ov_pol = rd.table(ov, "policies", "overlap.")
    overlap = OverlapFit({str(p): rd.rows(v, f"overlap.policies.{p}", 2) for p, v in ov_pol.items()},
                         rd.report(ov, "overlap."))
    for p, rows in overlap.policies.items():
        if len(rows) != k - 1:
            raise rd.fail(f"overlap.policies.{p}", f"expected {k - 1} rows (draft steps 1..k-1 of "
                          f"k = {k} positions), got {len(rows)}")
    return overlap


def _phases(rd: _Reader, phases_raw: dict[str, Any]) -> dict[str, PhaseFit]:
    """Each phase's cost fit: features it can be priced on, non-negative coefficients."""
    phases: dict[str, PhaseFit] = {}
    from mtpsim.models.cost import StepShape, cost_features
    from mtpsim.models.families import Stack

    # the features each phase can be priced on, with every layer kind present
    known = cost_features(StepShape(), 1, 1, Stack(layers=2, mla=1, linear=1, indexer=1, dense=1,
                                                   moe=1))
    for p in PHASES:
        ph = rd.table(phases_raw, p, "cost.phases.")
        where = f"cost.phases.{p}."
        feats, coef = rd.get(ph, "features", where), rd.get(ph, "coef", where)
        if (not isinstance(feats, list) or not all(isinstance(f, str) for f in feats)
                or not isinstance(coef, list) or len(coef) != len(feats)
                or not all(isinstance(c, int | float) and not isinstance(c, bool) and 0 <= c <= 1e3
                           for c in coef)):
            raise rd.fail(f"{where}coef", "expected one non-negative number (seconds per unit, at "
                          "most 1e3) per name in features")
        if unknown := [f for f in feats if f not in known[p]]:  # else priced at 0 s, silently
            raise rd.fail(f"{where}features", f"expected features of {p} ({', '.join(known[p])}), "
                          f"got {unknown[0]!r}")
        phases[p] = PhaseFit(list(feats), [float(c) for c in coef],
                             float(rd.num(ph, "r2", where, optional=True) or math.nan),
                             float(rd.num(ph, "rmse_s", where, optional=True) or math.nan),
                             int(rd.num(ph, "n", where) or 0))
    return phases


def _indexer_keys(rd: _Reader, cost: dict[str, Any]) -> str:
    """How the fit counted the indexer's keys; absent: "own" (files fitted before the option)."""
    from mtpsim.models.cost import INDEXER_KEYS

    v = cost.get("indexer_keys", "own")
    if v not in INDEXER_KEYS:
        raise rd.fail("cost.indexer_keys", f"expected one of {', '.join(map(repr, INDEXER_KEYS))} "
                      f"(how the fit counted the indexer's keys), got {_short(v)}")
    return str(v)


def _ranges(rd: _Reader, obj: dict[str, Any]) -> dict[str, Any]:
    """The fitted traces' ranges (tokens, requests, k, top-k: >= 1; temperature >= 0)."""
    ranges = rd.table(obj, "ranges", "")
    for key, v in ranges.items():
        low = 0 if key == "temperature" else 1  # tokens, requests, k, top-k: at least 1
        if not isinstance(v, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) and low <= x <= 1e9 for x in v):
            raise rd.fail(f"ranges.{key}", f"expected a list of numbers in {low}..1e9, got {_short(v)}")
    return ranges


def _bootstrap(rd: _Reader, v: Any) -> list[dict[str, Any]]:
    """Optional refits on resampled traces (mtpsim.uncertainty.bootstrap), checked for shape."""
    if v is None:
        return []
    if not isinstance(v, list) or not all(
            isinstance(r, dict) and isinstance(r.get("acceptance"), dict)
            and isinstance(r.get("overlap"), dict) and isinstance(r.get("cost"), dict) for r in v):
        raise rd.fail("bootstrap", "expected a list of {acceptance, overlap, cost} refits")
    return v


_CACHE: dict[tuple[str, int, int], Calibration] = {}


def read_calibration(path: str | Path) -> Calibration:
    """Read and validate a calibration file (cached by path, size and mtime)."""
    path = Path(path)
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        if key in _CACHE:
            return _CACHE[key]
    except FileNotFoundError:
        raise CalibrationError(path, None, "file not found (write one with mtpsim simulate "
                               "--trace ... --save-calibration)") from None
    except OSError as e:
        raise CalibrationError(path, None, f"expected a readable calibration file "
                               f"({e.strerror or type(e).__name__})") from None
    text = read_text(path, CalibrationError, "calibration file", 64 * MiB)
    cal = calibration_from_json(loads_json(text, path, CalibrationError), path)
    _CACHE[key] = cal
    return cal


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
