"""Grids of simulations: `--set key=v1,v2,...` axes, one atomic file per point, resumable,
run on the executor (mtpsim.runs.executor).

A point is the experiment with one value per axis. Its file `DIR/points/<id>.json` is named by
a hash of the validated spec less the fields that change no result (labels; a simulation's
runner fields), so an edited experiment file or a different grid never reuses a stale point
and a renamed description reuses every finished one. It is written on the driver as each point
arrives (from a local worker or a Ray node), so an interrupted sweep keeps every finished point
and a rerun skips them. The file records the mtpsim that made it (`made_by`: version, a hash of
its code, the git commit); a point made by other code is rerun, since a sweep's points are
compared with each other, and a resumed sweep says what it reuses and reruns, and why
(`resume_lines`).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import SpecError
from mtpsim.fileio import atomic_write_json
from mtpsim.records import RunExtra

if TYPE_CHECKING:
    from mtpsim.runs.executor import Pool

FORMAT = "mtpsim-sweep-point"
VERSION = 1
SOURCE = "--set"
MAX_POINTS = 4096  # every point is validated up front; a bigger grid is a typo, not a sweep
# Result figures a sweep row keeps (the full Result stays with `mtpsim simulate --out`).
ROW_METRICS = ("request_throughput", "output_throughput", "total_token_throughput",
               "median_ttft_ms", "median_tpot_ms", "p90_tpot_ms", "median_itl_ms",
               "spec_decode_acceptance_length", "spec_decode_acceptance_rate",
               "spec_decode_num_drafts", "spec_decode_per_position_acceptance_rates", "duration")


@dataclass(frozen=True, slots=True)
class Axis:
    key: str  # dotted spec path, e.g. speculative.num_speculative_tokens
    values: tuple[str, ...]  # TOML value texts, e.g. ("1", "2")


@dataclass(frozen=True, slots=True)
class Point:
    overrides: tuple[str, ...]  # the fixed overrides, then one `key=value` per axis
    values: dict[str, Any]  # axis key -> parsed value
    point_id: str
    notes: tuple[str, ...] = ()


def split_values(text: str, key: str | None = None) -> list[str]:
    """Split on commas outside brackets and quotes: `1,2` -> [1, 2]; `["a","b"],["c"]` -> 2.
    `key` is the axis the values belong to, for the error message."""
    out, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    if depth != 0 or quote:
        raise SpecError(SOURCE, key, f"expected balanced brackets and quotes, got {text!r}")
    return out


def parse_axes(sets: Sequence[str]) -> tuple[list[str], list[Axis]]:
    """`--set` texts -> (fixed overrides, axes). A key with one value is a plain override."""
    fixed: list[str] = []
    axes: list[Axis] = []
    seen: set[str] = set()
    for text in sets:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key or not all(key.split(".")):
            raise SpecError(SOURCE, text or None, "expected section.key=value[,value...]")
        if key in seen:
            raise SpecError(SOURCE, key, "expected each key once (list its values with commas)")
        seen.add(key)
        values = split_values(value, key)
        if any(not v for v in values):
            raise SpecError(SOURCE, key, f"expected non-empty values, got {value!r}")
        if len(values) == 1:
            fixed.append(f"{key}={values[0]}")
        else:
            axes.append(Axis(key, tuple(values)))
    return fixed, axes


def row_extra(extra: RunExtra) -> dict[str, Any]:
    """What a sweep row keeps of a run's record: the KV cache's effect (docs/simulator.md)."""
    kept = {"num_preemptions": extra.num_preemptions, "mean_queue_ms": extra.mean_queue_ms}
    return {k: v for k, v in kept.items() if v is not None}


# What a point's results do not depend on, by the roles of mtpsim.spec.fields.ROLES: a plain
# simulation reads no label, runner or prior field; `--uncertainty` draws read the priors; a
# real run reads the runner fields (how the engine is launched) too.
IGNORED = {"simulation": ("label", "runner", "prior"), "uncertainty": ("label", "runner"),
           "real": ("label",)}


def _spec_id(exp: Any, kind: str = "simulation") -> str:
    """A hash of what the point's results depend on: the validated spec less the fields of the
    roles IGNORED[kind] (e.g. description, [reference], [uncertainty] for a plain simulation),
    so a renamed description reuses every finished point (mtpsim.spec.roles)."""
    from mtpsim.spec.roles import without_roles

    d = without_roles(exp.to_dict(), IGNORED[kind])
    d.pop("source", None)
    d.pop("overrides", None)
    cal = exp.calibration.file
    if cal:  # a refitted calibration file is a different point
        from mtpsim.models.build import calibration_path

        p = Path(calibration_path(exp))
        d["calibration_file_sha"] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
    blob = json.dumps(d, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _extend_acceptance(base: Any, k: Any) -> tuple[list[str], tuple[str, ...]]:
    """A swept k beyond the spec's measured positions: repeat the last conditional rate (said in
    a note), so that `--set speculative.num_speculative_tokens=1,...,5` works on a k=3 table."""
    from mtpsim.metrics import conditional_to_marginal, marginal_to_conditional
    from mtpsim.spec.fields import FLOAT_RANGE

    a = base.acceptance
    if (base.calibration.file or not isinstance(k, int) or isinstance(k, bool)
            or len(a.per_position) >= k or a.policy_rates):
        return [], ()
    rates = list(a.per_position)
    cond = marginal_to_conditional(rates) if a.kind == "marginal" else rates
    cond = cond + [cond[-1]] * (k - len(cond))
    new = conditional_to_marginal(cond) if a.kind == "marginal" else cond
    # far positions' marginal rates underflow the numbers check's smallest magnitude (k >= 53 on
    # the PR's rates): a rate below it is 0, which the check accepts and no run can tell apart
    new = [x if x >= FLOAT_RANGE[0] else 0.0 for x in new]
    note = (f"k={k}: acceptance positions {len(rates)}..{k - 1} extrapolated "
            f"(last conditional rate {cond[len(rates) - 1]:.4f} repeated)")
    return [f"acceptance.per_position=[{', '.join(f'{x:.6g}' for x in new)}]"], (note,)


def with_extended_acceptance(experiment: str | Path,
                             overrides: Sequence[str]) -> tuple[list[str], tuple[str, ...]]:
    """A k set by --set beyond the spec's acceptance table, as a swept k is: the last conditional
    rate repeated, and a note that says so (`simulate` and `run-real` refused what `sweep` ran).
    Nothing changes when the table covers k, the user gave rates, or a calibration file replaces
    them."""
    from mtpsim.spec import load_experiment, parse_override

    key = "speculative.num_speculative_tokens"
    ks = [o for o in overrides if o.startswith(key + "=")]
    if not ks or any(o.startswith("acceptance.per_position=") for o in overrides):
        return list(overrides), ()
    base = load_experiment(experiment, [o for o in overrides if not o.startswith(key + "=")])
    extra, notes = _extend_acceptance(base, parse_override(ks[-1])[1])
    return [*overrides, *extra], notes


def build_points(experiment: str | Path, sets: Sequence[str], check_memory: bool = True,
                 kind: str = "simulation") -> tuple[list[Axis], list[Point]]:
    """Validate every grid point up front (a bad value is a SpecError before anything runs).
    `check_memory`: the simulator's memory check (off for the reference engine, whose small
    model is not the spec's `[model]`). `kind`: what the points run ("simulation",
    "uncertainty" draws, or "real"), which decides what their ids count (IGNORED)."""
    from mtpsim.spec import load_experiment, parse_override
    from mtpsim.spec.paths import command_line_sets, command_line_value

    fixed, axes = parse_axes(sets)
    # --set paths are from the current folder (mtpsim.spec.paths)
    fixed = command_line_sets(experiment, fixed)
    axes = [Axis(a.key, tuple(command_line_value(experiment, a.key, v) for v in a.values))
            for a in axes]
    size = math.prod(len(a.values) for a in axes)
    if size > MAX_POINTS:
        raise SpecError(SOURCE, None, f"expected a grid of at most {MAX_POINTS:,} points, got "
                        f"{' x '.join(str(len(a.values)) for a in axes)} = {size:,}")
    base = load_experiment(experiment, fixed)
    k_key = "speculative.num_speculative_tokens"
    own_rates = any(o.startswith("acceptance.per_position=") for o in fixed) or any(
        a.key == "acceptance.per_position" for a in axes)
    points = []
    for combo in itertools.product(*[a.values for a in axes]):
        ov = fixed + [f"{a.key}={v}" for a, v in zip(axes, combo, strict=True)]
        values = {a.key: parse_override(f"{a.key}={v}")[1] for a, v in zip(axes, combo, strict=True)}
        extra, notes = ([], ()) if own_rates else _extend_acceptance(base, values.get(k_key, base.k))
        ov += extra
        exp = load_experiment(experiment, ov)
        if check_memory and not exp.calibration.file:  # else a fitted cost model stands in
            _check_fits(exp, ", ".join(ov[len(fixed):len(fixed) + len(axes)]))
        points.append(Point(tuple(ov), values, _spec_id(exp, kind), notes))
    ids = [p.point_id for p in points]
    if len(set(ids)) != len(ids):
        raise SpecError(SOURCE, None, "expected distinct grid points (two values give the same spec; "
                        "a label field, and in a simulation a runner or prior field, changes no result)")
    return axes, points


def _check_fits(exp: Any, point: str) -> None:
    """The simulator's memory check, run up front: a point that cannot fit names its values, and
    where the failing field was set (--set, or the experiment file: a sweep with no axis, or one
    whose axes leave that field as the file has it)."""
    from mtpsim.models.memory import check_fits

    try:
        check_fits(exp)
    except SpecError as e:
        src = exp.source_of(e.field) if e.field else SOURCE
        raise SpecError(src, e.field, f"{e.expected} (at {point})" if point else e.expected) from None


def point_path(out: Path, point: Point) -> Path:
    return out / "points" / f"{point.point_id}.json"


def made_by() -> dict[str, Any]:
    """The mtpsim that makes a point here: its version, a hash of its code (every .py, .toml and
    .json file of the package: the model, the presets, the defaults) and, in a git checkout,
    the commit (None where installed from a wheel; the code hash also covers uncommitted edits)."""
    return dict(_made_by())


@functools.cache
def _made_by() -> tuple[tuple[str, Any], ...]:
    from mtpsim import __version__

    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(root.rglob("*")):
        if f.suffix in (".py", ".toml", ".json") and "__pycache__" not in f.parts and f.is_file():
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return (("version", __version__), ("code", h.hexdigest()[:16]), ("commit", _commit(root)))


def _commit(root: Path) -> str | None:
    """The git commit of the checkout `root` (the package folder) is in, else None."""
    import subprocess

    if not (root.parent / ".git").exists():
        return None
    try:
        r = subprocess.run(["git", "-C", str(root.parent), "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def _code_of(rec: dict[str, Any]) -> str | None:
    made = rec.get("mtpsim")
    return str(made.get("code")) if isinstance(made, dict) else None


def load_finished(path: Path, point: Point) -> dict[str, Any] | None:
    """The point's stored record if it is complete and matches, else None (rerun it)."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = (isinstance(rec, dict) and rec.get("format") == FORMAT and rec.get("version") == VERSION
          and rec.get("point_id") == point.point_id and isinstance(rec.get("results"), dict))
    return rec if ok else None


# An experiment as a path, or as its parsed TOML and the path it came from (shipped to nodes
# that do not share the driver's files).
ExperimentRef = str | tuple[dict[str, Any], str]


def load_point(experiment: ExperimentRef, overrides: Sequence[str]) -> Any:
    from mtpsim.spec import experiment_from_dict, load_experiment

    if isinstance(experiment, str):
        return load_experiment(experiment, list(overrides))
    raw, source = experiment
    return experiment_from_dict(raw, source, list(overrides))


def read_experiment(path: str | Path) -> tuple[dict[str, Any], str]:
    """The experiment's TOML as data, to ship to cluster nodes."""
    import tomllib

    from mtpsim.spec import load_experiment

    load_experiment(path)  # a bad file is a SpecError here, on the driver
    return tomllib.loads(Path(path).read_text(encoding="utf-8")), str(path)


def run_point(experiment: ExperimentRef, point: Point, out: Path | None) -> dict[str, Any]:
    """Simulate every policy of one point (as `mtpsim simulate` does); write its file if `out`."""
    from mtpsim.sim.simulator import simulate

    exp = load_point(experiment, point.overrides)
    source = experiment if isinstance(experiment, str) else experiment[1]
    results = {}
    for policy in exp.policies:
        res = simulate(exp, policy)
        results[policy] = {
            "metrics": {**{k: res.metrics[k] for k in ROW_METRICS if k in res.metrics},
                        **row_extra(res.extra)},
            "phases": res.phases,
            "step_saving_vs_fresh_s": res.extra.step_saving_vs_fresh_s}
    rec = {"format": FORMAT, "version": VERSION, "point_id": point.point_id,
           "experiment": source, "overrides": list(point.overrides), "values": point.values,
           "notes": list(point.notes), "results": results}
    if out is not None:
        atomic_write_json(point_path(out, point), rec)
    return rec


def _run_job(experiment: ExperimentRef, point: Point) -> dict[str, Any]:
    return run_point(experiment, point, None)


@dataclass(frozen=True, slots=True)
class PointFiles:
    """A sweep's resumable point files, DIR/points/<id>.json (the executor's Store): the
    driver writes each as it arrives; a complete one is reused (its record marked resumed)."""

    out: Path

    def load(self, point: Point) -> dict[str, Any] | None:
        """The point's finished record if this mtpsim's code made it, else None (rerun it)."""
        rec = load_finished(point_path(self.out, point), point)
        if rec is None or _code_of(rec) != made_by()["code"]:
            return None
        rec["resumed"] = True
        return rec

    def save(self, point: Point, rec: dict[str, Any]) -> None:
        rec["mtpsim"] = made_by()
        atomic_write_json(point_path(self.out, point), rec)


def resume_lines(out: Path, points: Sequence[Point], experiment: str) -> list[str]:
    """What a sweep into `out` does with the point files already there: one line per kind,
    with counts (none when the folder holds no point file)."""
    folder = out / "points"
    if not folder.is_dir() or not any(folder.glob("*.json")):
        return []
    code = made_by()["code"]
    kinds: dict[str, list[Point]] = {k: [] for k in ("reused", "other", "before", "damaged", "new")}
    others = set()
    for p in points:
        path = point_path(out, p)
        rec = load_finished(path, p) if path.exists() else None
        kind = ("new" if not path.exists() else "damaged" if rec is None else
                "before" if _code_of(rec) is None else "reused" if _code_of(rec) == code else "other")
        if kind == "other":
            others.add(str(_code_of(rec)))
        kinds[kind].append(p)
    changed = _changed_since(folder, kinds["new"], experiment, {p.point_id for p in points})
    new = [p for p in kinds["new"] if p not in changed]
    n = {k: len(v) for k, v in kinds.items()}
    commit = made_by()["commit"]
    this = f"this is {code}" + (f", commit {commit[:12]}" if commit else "")
    said = [(n["reused"], f"reused from {folder} (same spec, same mtpsim code)"),
            (n["other"], f"rerun: made by other mtpsim code ({', '.join(sorted(others))}; {this}): "
                         "a sweep's points come from one model"),
            (n["before"], "rerun: made before point files recorded the mtpsim that made them"),
            (n["damaged"], "rerun: the file does not read as a finished point of this grid"),
            (len(changed), "rerun: their spec changed since their files were made (same experiment "
                           "and --set; the experiment file, a preset or an mtpsim default changed); "
                           "the old files are left unread"),
            (len(new), f"new: no file in {folder}")]
    return [f"resume: {k} point{'s' if k != 1 else ''} {text}" for k, text in said if k]


def _changed_since(folder: Path, missing: Sequence[Point], experiment: str,
                   ids: set[str]) -> list[Point]:
    """The points without a file whose experiment and --set a file of another spec holds: their
    spec changed since that file was made."""
    wanted = {tuple(p.overrides): p for p in missing}
    here = Path(experiment).resolve()
    found = []
    for f in folder.glob("*.json"):
        if f.stem in ids or not wanted:
            continue
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (isinstance(rec, dict) and isinstance(rec.get("overrides"), list)
                and isinstance(rec.get("experiment"), str) and Path(rec["experiment"]).resolve() == here
                and (p := wanted.pop(tuple(rec["overrides"]), None)) is not None):
            found.append(p)
    return found


def run_points(experiment: str, points: Sequence[Point], out: Path | None,
               jobs: int | Pool) -> Iterator[dict[str, Any]]:
    """Yield each point's record as it finishes (in completion order) on the executor's pool
    (`jobs` local workers, or a Ray pool: the experiment then travels as data); finished
    points already in `out` are yielded first without running. Work stops on any exit."""
    from mtpsim.runs.executor import as_pool, run_jobs

    pool = as_pool(jobs)
    ship: ExperimentRef = experiment if pool.shares_files else read_experiment(experiment)
    store = PointFiles(out) if out is not None else None
    for _, rec in run_jobs(_run_job, points, ship, pool, ordered=False, store=store):
        yield rec


def json_rows(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """The rows as JSON keeps them: an infinite axis value as "inf" (as a spec's echo writes it),
    where strict JSON would make it null, which a script cannot tell from a value not set."""
    from mtpsim.spec.experiment import json_safe

    return [{k: json_safe(v) if k in keys else v for k, v in row.items()} for row in rows]


def rows(records: Sequence[dict[str, Any]], axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """One flat row per (point, policy), in grid order: axis values, policy, metrics."""
    out = []
    for rec in records:
        for policy, r in rec["results"].items():
            row = {a.key: rec["values"][a.key] for a in axes}
            row["policy"] = policy
            row.update({k: v for k, v in r["metrics"].items() if not isinstance(v, list)})
            row["point_id"] = rec["point_id"]
            out.append(row)
    return out
