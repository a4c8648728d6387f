"""Running an experiment's policies for real, round by round, resumable: the loop behind
`mtpsim run-real` (the command parses options, prints tables and says what an interrupt kept).

A run of R rounds runs every policy on each round's requests (A B / B A order, mtpsim.rounds) and
writes DIR/rounds/rNN/<policy>.json and .trace.jsonl, then the pooled DIR/<policy>.json; one round
writes DIR/<policy>.json directly. A result is written last, so one on disk is complete; a rerun
keeps the results of the same settings and refuses those of other settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import ResultError, SpecError, UserError

if TYPE_CHECKING:
    from mtpsim.result import Result
    from mtpsim.spec import Experiment


# Spec entries that do not change one policy's run (which policies run, labels, and the
# simulator's acceptance model, priors and noise model, which a real run never reads).
_NOT_SETTINGS = ("policies", "description", "source", "overrides", "acceptance", "uncertainty")


def _settings(spec: dict) -> dict:
    out = {k: v for k, v in json.loads(json.dumps(spec)).items() if k not in _NOT_SETTINGS}
    if isinstance(out.get("workload"), dict):  # the rounds run are checked apart (`rounds`)
        out["workload"].pop("rounds", None)
    return out


_ABSENT = object()


def _changed(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two spec dicts. A field the old result's spec
    lacks (added to mtpsim since) counts as unchanged while the new spec holds its default."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            key = f"{prefix}{k}"
            if k not in old and _json_default(key) == new[k]:
                continue
            out += _changed(old.get(k, _ABSENT), new.get(k, _ABSENT), key + ".")
        return out
    return [] if old == new else [prefix.rstrip(".")]


def with_added_fields(spec: dict) -> dict:
    """A result's spec with the fields mtpsim added since it was written filled in as today's
    code resolves that same spec (a preset's new field, e.g. hardware.sms from the GPU preset):
    unchanged unless the new spec sets them otherwise. A spec that no longer validates is taken
    as written (its missing fields then count as unchanged only at their defaults, `_changed`)."""
    from mtpsim.errors import UserError
    from mtpsim.spec.experiment import experiment_from_dict

    out = json.loads(json.dumps(spec))
    try:
        now = experiment_from_dict({k: v for k, v in out.items()
                                    if k not in ("source", "overrides")}).to_dict()
    except (UserError, TypeError, ValueError, KeyError):
        return out
    for section, fields in now.items():
        if isinstance(fields, dict) and isinstance(out.get(section), dict):
            for key, value in fields.items():
                out[section].setdefault(key, value)
    return out


def _json_default(dotted: str) -> Any:
    """The default of spec field `section.key` as a spec dict holds it (_ABSENT if none)."""
    import dataclasses

    from mtpsim.spec.experiment import SECTIONS

    section, _, key = dotted.partition(".")
    fields = {f.name: f for f in dataclasses.fields(SECTIONS[section])} if section in SECTIONS else {}
    f = fields.get(key)
    if f is None:
        return _ABSENT
    value = f.default if f.default is not dataclasses.MISSING else (
        f.default_factory() if f.default_factory is not dataclasses.MISSING else _ABSENT)
    return value if value is _ABSENT else json.loads(json.dumps(value))


def weights_sha_of(exp: Experiment) -> str | None:
    """The content hash of the reference weights the run will load (a bad path, a damaged
    sidecar or file: one line, before any run starts); None for the server's seeded random-init
    test model, which has no file (its name and the seed, both in the spec, say what it is)."""
    from mtpsim.engine.runner import weights_path
    from mtpsim.engine.weights import check, fingerprint
    from mtpsim.serve_reference.server import TINY_RANDOM

    if exp.reference.weights == TINY_RANDOM:
        return None
    path = weights_path(exp)
    check(path)
    return fingerprint(path)


DAMAGED = ("not a finished result to resume (run-real writes each whole, so this one was cut "
           "short or written by something else): move it aside to keep it, or rerun with --force "
           "to replace it")


def finished(path: Path, mode: str, policy: str, exp: Experiment, served: bool,
              weights_sha: str | None = None, rounds: int = 1) -> Result | None:
    """A complete result of the same run already at `path` (a rerun keeps it), None if there is
    none; a result of other settings (spec, weights, engine, policy), a file there that does
    not read as a result, and one without its trace beside it, are refused (never rerun over,
    which would replace what it holds, nor kept without a word, which would leave the run's
    trace missing). Reference weights are compared by content (`weights_sha`) when the result
    records it: the same file moved is the same run, a file retrained in place is not."""
    res = _finished(path, mode, policy, exp, served, weights_sha, rounds)
    if res is not None:
        require_trace(path, "the policy")
    return res


def require_trace(path: Path, rerun: str) -> None:
    """A result's trace, POLICY.trace.jsonl, is beside it: run-real writes each trace (a
    round's, a policy's, the pooled one) before its result, so a result without one had its
    trace moved or deleted. `rerun`: what moving the result aside reruns."""
    trace_path = path.with_suffix(".trace.jsonl")
    if not trace_path.is_file():
        raise UserError(path, None, f"expected its trace {trace_path.name} beside it (run-real "
                        "writes each trace before its result, so it was moved or deleted): put it "
                        f"back, or move this result aside to rerun {rerun}, or rerun with --force")


def _finished(path: Path, mode: str, policy: str, exp: Experiment, served: bool,
              weights_sha: str | None, rounds: int) -> Result | None:
    import os

    from mtpsim.result import load_result

    if not os.path.lexists(path):
        return None
    if path.is_dir():  # where the result will be written: --force could not replace it either
        raise UserError(path, None, "expected the policy's result file or nothing there, got a "
                        "folder: move it aside or choose another --out")
    try:
        res = load_result(path)
    except ResultError as e:  # results are written whole (atomic rename): this one is damaged
        raise UserError(path, e.field, f"{e.expected}: {DAMAGED}") from None
    diff = ([] if res.mode == mode else ["engine"]) + ([] if res.policy == policy else ["policy"])
    diff += [] if (res.extra.server_argv is not None) == served else ["--server"]
    old, new = _settings(with_added_fields(res.spec)), _settings(exp.to_dict())
    if weights_sha is not None and res.extra.weights_sha256 is not None:
        for spec in (old, new):
            spec.get("reference", {}).pop("weights", None)
        diff += [] if res.extra.weights_sha256 == weights_sha else ["reference weights (content)"]
    diff += _changed(old, new)
    had = len(res.extra.rounds or [None])
    diff += [] if had == rounds else [f"rounds ({had} there, {rounds} now)"]
    if diff:
        shown = ", ".join(diff[:4]) + (f" and {len(diff) - 4} more" if len(diff) > 4 else "")
        raise UserError(path, None, f"expected a result of the same settings to resume, but "
                        f"{shown} differ; rerun with --force to replace it, or choose another --out")
    return res


def round_plan(exp: Experiment, rounds: int | None, served: bool,
                source: Path | None = None) -> list[tuple[tuple[str, ...], range]]:
    """(policies in order, request indices) per round; one round for a served run, whose
    server serves one policy per start."""
    from mtpsim import rounds as rounds_mod

    n = exp.workload.num_prompts
    if served:
        if rounds not in (None, 1):
            raise UserError(None, "--rounds", "applies to the in-process reference engine (a served "
                            "run starts one server per policy); pass --rounds 1 or drop --server")
        if exp.workload.rounds > 1:
            raise SpecError(source, "workload.rounds", "expected 0 or 1 for a served run (one server "
                            "per policy serves the whole stream)")
        r = 1
    else:
        conc = min(exp.workload.max_concurrency or n, exp.engine.max_num_seqs, n)
        # flag > the spec's rounds (what its simulation serves too) > a full batch per round
        r = rounds if rounds is not None else (exp.workload.rounds or rounds_mod.auto_rounds(n, conc))
        if not 1 <= r <= n:
            raise UserError(None, "--rounds", f"expected 1 to {n} (the workload's requests), got {r}")
    return list(zip(rounds_mod.order(exp.policies, r), rounds_mod.chunks(n, r), strict=True))


def round_path(out: Path, r: int, n_rounds: int, policy: str) -> Path:
    return out / f"{policy}.json" if n_rounds == 1 else out / "rounds" / f"r{r:02d}" / f"{policy}.json"


def finished_round(path: Path, mode: str, policy: str, exp: Experiment, served: bool,
                    weights_sha: str | None, r: int, n_rounds: int) -> tuple[Result, object] | None:
    """A complete round of the same run at `path` with its trace, or None (then it reruns). A
    round's trace is written before its result, so a result without its trace was moved or
    deleted: refused, not rerun over (that would replace a finished measurement)."""
    from mtpsim.trace import read_trace

    res = _finished(path, mode, policy, exp, served, weights_sha, rounds=1)
    if res is None:
        return None
    where = res.extra.round or {}
    if where.get("index") != r or where.get("of") != n_rounds:
        raise UserError(path, "extra.round", f"expected round {r + 1} of {n_rounds}, found "
                        f"{where}; rerun with --force or choose another --out")
    require_trace(path, "the round")
    return res, read_trace(path.with_suffix(".trace.jsonl"))


def check_rounds(out: Path, plan: list[tuple[tuple[str, ...], range]], kept: dict[str, Result],
                 mode: str, exp: Experiment, served: bool, weights_sha: str | None) -> None:
    """Before any run: every round already on disk of a policy not kept is one of this run
    (a damaged round file, or one of other settings, is one line now, not rounds later)."""
    if len(plan) == 1:
        return
    for r, (names, _) in enumerate(plan):
        for name in names:
            if name not in kept:
                finished_round(round_path(out, r, len(plan), name), mode, name, exp, served,
                               weights_sha, r, len(plan))


def pool_rounds(parts: list[tuple[Result, object]], out: Path, name: str) -> tuple[Result, object]:
    """Write the policy's pooled result and trace (after its last round) and return them."""
    from mtpsim import rounds as rounds_mod

    res = rounds_mod.pool([p[0] for p in parts])
    tr = rounds_mod.pool_traces([p[1] for p in parts])
    tr.write(out / f"{name}.trace.jsonl")
    res.write(out / f"{name}.json")
    return res, tr


class Probe:
    """Machine-speed probe readings: the reading after one block is the one before the next."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self.last = enabled, None

    def reading(self, fresh: bool = False) -> dict | None:
        if not self.enabled:
            return None
        if fresh or self.last is None:
            from mtpsim.probe import run_probe

            self.last = run_probe()
        return self.last


@dataclass
class RealRun:
    """One run as it goes: finished policies (kept or run now), each one's requests done so far
    while it runs, and the rounds on disk, so an interrupted run can say what it kept."""

    exp: Experiment
    out: Path
    plan: list[tuple[tuple[str, ...], range]]
    results: dict[str, Result] = field(default_factory=dict)
    traces: dict[str, Any] = field(default_factory=dict)
    progress: dict[str, int] = field(default_factory=dict)
    done_rounds: dict[str, list[Path]] = field(default_factory=dict)


def run_policies(run: RealRun, runner: Callable[..., Any], *, mode: str, served: bool,
                 weights_sha: str | None, kept: dict[str, Result], force: bool, probe: Probe,
                 level: Any = False, start: Callable[[str, str, int], Callable[[int, int], None]],
                 say: Callable[[str], None], flags: list[str] | None = None) -> None:
    """Run every policy not `kept` over the plan's rounds with `runner` (exp, policy, progress,
    requests=..., level=`level` when set: True or a level Sampling) -> (Result, Trace).
    `start(policy, label, requests)` shows a progress line and returns its updater; `say` prints a line;
    `flags`: run-real's flags beyond the spec, recorded in each result (extra.run_flags)."""
    from mtpsim import rounds as rounds_mod

    exp, out, plan = run.exp, run.out, run.plan
    for name, prev in kept.items():
        run.results[name] = prev
        say(f"{name}: kept {out / f'{name}.json'} (use --force to rerun)")
    by_round: dict[str, list[tuple[Result, object]]] = {p: [] for p in exp.policies if p not in kept}
    for r, (names, chunk) in enumerate(plan):
        for position, name in enumerate(n for n in names if n not in kept):
            res_path = round_path(out, r, len(plan), name)
            prev_round = None if force or len(plan) == 1 else finished_round(
                res_path, mode, name, exp, served, weights_sha, r, len(plan))
            if prev_round is not None:
                by_round[name].append(prev_round)
                run.done_rounds.setdefault(name, []).append(res_path)
                continue
            label = name + (f" round {r + 1}/{len(plan)}" if len(plan) > 1 else "")
            shown = start(name, label, len(chunk))
            run.progress[name] = 0

            def tick(done: int, n: int, name: str = name, shown=shown) -> None:
                run.progress[name] = done
                shown(done, n)

            before = probe.reading()
            # `level`: the runner also times its in-engine level probe (backend's caps.level)
            asked = {"level": level} if level else {}
            if len(plan) == 1:
                result, run_trace = runner(exp, name, tick, **asked)
            else:
                result, run_trace = runner(exp, name, tick, requests=chunk, **asked)
            after = probe.reading(fresh=True)
            del run.progress[name]
            if weights_sha is not None:
                result.extra.weights_sha256 = weights_sha
            result.extra.round = {"index": r, "of": len(plan), "position": position,
                                  "requests": [chunk.start, chunk.stop]}
            if flags is not None:
                result.extra.run_flags = list(flags)
            if before is not None:
                result.extra.probe = {"before": before, "after": after}
                run_trace.meta.probe = [before, after]
            if len(plan) == 1:
                result.extra.rounds = [rounds_mod.summary(result)]
                run.results[name], run.traces[name] = result, run_trace
            else:
                res_path.parent.mkdir(parents=True, exist_ok=True)
            run_trace.write(res_path.with_suffix(".trace.jsonl"))
            result.write(res_path)  # last, so a result on disk means the round is complete
            by_round[name].append((result, run_trace))
            run.done_rounds.setdefault(name, []).append(res_path)
    if len(plan) > 1:
        for name, parts in by_round.items():
            run.results[name], run.traces[name] = pool_rounds(parts, out, name)
    run.results = {p: run.results[p] for p in exp.policies if p in run.results}


def unfinished_rounds(out: Path) -> str | None:
    """What an interrupted `run-real --rounds` left in `out` (rounds under DIR/rounds, a policy
    without its pooled DIR/<policy>.json), and the command that resumes it, in one line; None
    when every policy with rounds there has its pooled result (or there are no rounds)."""
    rounds = out / "rounds"
    by_policy: dict[str, int] = {}
    for f in sorted(rounds.glob("r[0-9]*/*.json")) if rounds.is_dir() else []:
        by_policy[f.stem] = by_policy.get(f.stem, 0) + 1
    missing = [p for p in by_policy if not (out / f"{p}.json").is_file()]
    if not missing:
        return None
    argv, of, whole = _resume_from_round(next(rounds.glob(f"r[0-9]*/{missing[0]}.json")), out)
    done = ", ".join(f"{p} {by_policy[p]}/{of or '?'} rounds" for p in missing)
    how = (f"if it was interrupted (not still running), resume it with the command that started "
           f"it: {argv} (read from its round results{_UNRECORDED * (not whole)})" if argv else
           "if it was interrupted (not still running), rerun the run-real command that started it, "
           "with the same --out, to resume it")
    return (f"expected finished results, got an unfinished run-real --rounds run ({done} kept in "
            f"{rounds}, no pooled result yet): {how}; then compare {out}")


def unfinished_policies(out: Path) -> str | None:
    """The policies of a run-real run in `out` (its results' spec) that have no result there,
    and the command that resumes it, in one line; None when none is missing."""
    from mtpsim.result import load_result

    held: dict[str, Result] = {}
    for f in sorted(out.glob("*.json")):
        try:
            res = load_result(f)
        except ResultError:
            continue
        if res.mode != "simulate" and isinstance(res.policy, str):
            held[res.policy] = res
    first = next(iter(held.values()), None)
    policies = first.spec.get("policies") if first is not None else None
    if not isinstance(policies, list):
        return None
    missing = [p for p in policies if isinstance(p, str) and p not in held]
    if not missing:
        return None
    argv, _, whole = _resume_from(first, out)
    how = (f"if its run was interrupted, resume it: {argv} (read from its results"
           f"{_UNRECORDED * (not whole)})" if argv else
           "if its run was interrupted, rerun the run-real command with the same --out")
    return f"{out} holds no result of {', '.join(missing)} (policies of its experiment): {how}"


def run_flags(trace: bool, bench_client: str, level_every: int, probe_on: bool) -> list[str]:
    """run-real's flags that change a run beyond its spec, as argv (the defaults left out): what
    a resume command repeats, and what each result records (extra.run_flags)."""
    flags = ["--trace"] if trace else []
    flags += ["--bench-client", bench_client] if bench_client != "mtpsim" else []
    flags += ["--level-every", str(level_every)] if level_every else []
    return flags + ([] if probe_on else ["--no-probe"])


# The flags run_flags writes, and whether each takes a value: a result's record is read back
# through this (an edited file adds no other flag to a printed command).
RUN_FLAGS = {"--trace": False, "--bench-client": True, "--level-every": True, "--no-probe": False}


# A result written before results recorded run-real's flags (extra.run_flags): they are unknown.
_UNRECORDED = "; add any --trace, --bench-client, --level-every or --no-probe it had"


def _resume_from_round(path: Path, out: Path) -> tuple[str | None, int | None, bool]:
    """(the run-real command a round result's spec and records give, shell-quoted, or None;
    the run's round count, or None; whether the result recorded its run-real flags)."""
    from mtpsim.result import load_result

    try:
        res = load_result(path)
    except ResultError:
        return None, None, False
    return _resume_from(res, out)


def _recorded_flags(res: Result) -> list[str] | None:
    """The run-real flags a result recorded (extra.run_flags), only those run_flags writes, a
    value where one is taken; None when it recorded none (made before the record) or they do
    not read."""
    flags, out = res.extra.run_flags, []
    if not isinstance(flags, list):
        return None
    it = iter(flags)
    for flag in it:
        if flag not in RUN_FLAGS:
            return None
        out.append(flag)
        if RUN_FLAGS[flag]:
            value = next(it, None)
            if not isinstance(value, str) or value.startswith("-"):
                return None
            out.append(value)
    return out


def _resume_from(res: Result, out: Path) -> tuple[str | None, int | None, bool]:
    """(the run-real command a real result's spec and records give, or None; its rounds;
    whether it holds the run-real flags beyond the spec, read from extra.run_flags)."""
    import shlex

    from mtpsim.real import BACKENDS
    from mtpsim.report.interrupt import resume_argv

    source, sets = res.spec.get("source"), res.spec.get("overrides")
    info = res.extra.round if isinstance(res.extra.round, dict) else {}
    pooled = res.extra.rounds if isinstance(res.extra.rounds, list) and res.extra.rounds else None
    of = info.get("of") if isinstance(info.get("of"), int) else len(pooled) if pooled else 1
    if not isinstance(source, str) or not isinstance(sets, list) or of is None:
        return None, of, False
    if (res.mode, False) not in BACKENDS and (res.mode, True) not in BACKENDS:
        return None, of, False
    opts = ["--engine", res.mode]
    opts += ["--server"] if res.extra.server_argv and (res.mode, False) in BACKENDS else []
    opts += ["--rounds", str(of)]
    opts += [x for s in sets if isinstance(s, str) for x in ("--set", _typed(source, s))]
    flags = _recorded_flags(res)
    opts += flags or []
    return shlex.join(resume_argv("run-real", source, str(out), opts)), of, flags is not None


def _typed(source: str, override: str) -> str:
    """A recorded `--set` as typed here: a path field's relative value (recorded from the
    experiment's folder, mtpsim.spec.paths) from the current folder."""
    import os

    from mtpsim.spec.paths import path_keys, resolved

    key, _, value = override.partition("=")
    if key.strip() not in path_keys():
        return override
    try:
        raw = json.loads(value)
    except ValueError:
        raw = value.strip()
    if not isinstance(raw, str) or not raw or Path(raw).expanduser().is_absolute():
        return override
    got = resolved(source, key.strip(), raw)
    return override if got == raw else f"{key}={json.dumps(os.path.relpath(got))}"
