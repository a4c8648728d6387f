"""The run behind `mtpsim compare`: the results loaded and sorted into modes, each policy found in
both modes paired sim against real, each policy A/B'd against the baseline within a mode
(mtpsim.compare is the engine), and the JSON the command prints. A real sweep's `--out` folder is
compared point by point (`compare_sweep`). mtpsim.report.compare prints what these return."""

from __future__ import annotations

import math
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError

if TYPE_CHECKING:  # numpy-free at import, so `mtpsim --help` starts fast
    from mtpsim.compare import ABReport, FidelityRow
    from mtpsim.result import Result
    from mtpsim.verdict import Rope

UNCERTAINTY_FILE = "uncertainty.json"  # what simulate --uncertainty --out writes beside results
MAX_BOOT = 100_000  # bootstrap replicates: CIs stop moving long before; more only costs memory


@dataclass(slots=True)
class Fidelity:
    """One policy simulated against real."""

    policy: str
    rows: list[FidelityRow]
    mape: float
    unlike: str | None  # why the two did not serve the same workload


@dataclass(slots=True)
class CompareRun:
    """What `compare` found, in the order it is reported, and its JSON form."""

    by_mode: dict[str, dict[str, Result]]
    fidelity: list[Fidelity] = field(default_factory=list)
    ab: list[tuple[str, ABReport]] = field(default_factory=list)  # (mode, report)
    out: dict[str, Any] = field(default_factory=lambda: {"fidelity": {}, "ab": {}})

    def pairs(self) -> dict[str, tuple[Result, Result]]:
        """Policy -> (real, sim), for every policy held in both modes."""
        sim, real = self.by_mode.get("sim", {}), self.by_mode.get("real", {})
        return {p: (real[p], sim[p]) for p in real if p in sim}


@dataclass(slots=True)
class SweepPointAB:
    """One policy against the baseline at one sweep point, all repeats pooled."""

    label: str
    repeats: tuple[int, int]
    rep: ABReport
    spread: list[Any]  # mtpsim.compare_sweep.RepeatSpread


def check_flags(baseline: str, num_boot: int, seed: int) -> None:
    """The flags' meaning, before any file is read."""
    from mtpsim.policies import NO_MTP, POLICIES

    if baseline not in (*POLICIES, NO_MTP):
        raise UserError(None, "--baseline", f"expected a policy ({', '.join([*POLICIES, NO_MTP])}), "
                        f"got {baseline!r}")
    if not 100 <= num_boot <= MAX_BOOT:
        raise UserError(None, "--num-boot", f"expected 100..{MAX_BOOT:,} replicates, got {num_boot:,}")
    if not 0 <= seed < 2**63:
        raise UserError(None, "--seed", f"expected an integer in 0..2**63-1, got {seed}")


def load_inputs(inputs: list[str]) -> list[Result]:
    """`[POLICY=]PATH` where PATH is a result file or a folder of `*.json` results."""
    from mtpsim.policies import NO_MTP, POLICIES
    from mtpsim.result import load_result

    labels = (*POLICIES, NO_MTP)
    out: list[Result] = []
    seen: dict[tuple[str, str | None], Path] = {}  # (mode, policy) -> the file it came from
    named: dict[Path, tuple[int, str]] = {}  # resolved path -> (argument number, as typed)
    for number, item in enumerate(inputs, 1):
        label, sep, raw = item.partition("=")
        if not sep or (label not in labels and ("/" in label or Path(item).exists())):
            # a path holding "=" (a folder named k=3)
            label, raw = "", item
        elif label not in labels:
            raise UserError(None, "inputs", f"{item}: expected [POLICY=]PATH with POLICY one of "
                            f"{', '.join(labels)}, got {label!r}")
        path = Path(raw)
        _check_not_named_twice(path, (number, raw), named)
        # a folder's uncertainty.json is simulate --uncertainty --out's draws, not a result
        files = sorted(f for f in path.glob("*.json") if f.name != UNCERTAINTY_FILE) \
            if path.is_dir() else [path]
        if path.is_dir():
            from mtpsim.real.run import unfinished_rounds

            if (unfinished := unfinished_rounds(path)) is not None:
                raise UserError(path, None, unfinished)
        if path.is_dir() and not files:
            raise UserError(path, None, "expected a folder holding result files (*.json)")
        for f in files:
            res = load_result(f)
            res.policy = _policy_of(res.policy, label, f, labels)
            key = ("sim" if res.mode == "simulate" else "real", res.policy)
            if key in seen and seen[key].resolve() == f.resolve():
                continue  # the same file named twice
            if key in seen:  # one would silently replace the other
                raise UserError(f, None, f"expected one {key[0]} result per policy, but {seen[key]} "
                                f"is {key[0]} {key[1]} too: compare pairs policies within a mode and "
                                "sim against real; compare those runs one at a time")
            seen[key] = f
            out.append(res)
    return out


def _policy_of(own: str | None, label: str, f: Path, labels: tuple[str, ...]) -> str:
    """A result's policy: its own, which a POLICY= label must not contradict (the A/B would be
    flipped without a word); a label for a file that names none (a vLLM bench JSON); else the file
    name when it is a policy's (fresh.json)."""
    if own is not None and own not in labels:
        raise UserError(f, "policy", f"expected one of {', '.join(labels)}, got {own!r}")
    if label and own is not None and label != own:
        raise UserError(f, "policy", f"labelled {label}= but the file is a {own} result: drop the "
                        f"label, or label it {own}=")
    if label or own is not None:
        return label or own  # type: ignore[return-value]
    if f.stem in labels:
        return f.stem
    raise UserError(f, "policy", "expected a result that names its policy, got none (a vLLM bench "
                    f"JSON?): label each such file, e.g. compare fresh={f} share=OTHER.json")


def _check_not_named_twice(path: Path, arg: tuple[int, str], named: dict[Path, tuple[int, str]]) -> None:
    """One path typed twice (`compare d d`, `compare d ./d/`) was read once and compared with
    itself, exit 0: the user meant two runs. A file inside a folder also given is still fine."""
    if not path.exists():
        return  # load_result names a missing file
    key = path.resolve()
    if key in named:
        first, typed = named[key]
        kind = "folder" if path.is_dir() else "file"
        raise UserError(None, "inputs", f"argument {arg[0]} ({arg[1]}): expected another run than "
                        f"argument {first} ({typed}), got the same {kind}: compare would read it "
                        f"once; give each run's {kind} once")
    named[key] = arg


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def compare(inputs: list[str], baseline: str, num_boot: int, seed: int, rope: Rope,
            normalise: bool | str) -> CompareRun:
    """Load, pair sim against real, A/B every policy against `baseline` within each mode
    (`normalise`: mtpsim.paired.paired_delta's, True = the machine probe, "level")."""
    from mtpsim.compare import fidelity, mean_abs_pct_error, workload_mismatch

    by_mode: dict[str, dict[str, Result]] = {}
    for res in load_inputs(inputs):
        mode = "sim" if res.mode == "simulate" else "real"
        by_mode.setdefault(mode, {})[res.policy or "?"] = res
    run = CompareRun(by_mode)
    for policy, (real, sim) in run.pairs().items():
        rows = fidelity(real, sim)
        fid = Fidelity(policy, rows, mean_abs_pct_error(rows), workload_mismatch(real, sim))
        run.fidelity.append(fid)
        run.out["fidelity"][policy] = {"mape_pct": fid.mape, "workload_mismatch": fid.unlike, "rows": [
            {"metric": r.key, "real": r.real, "sim": r.sim, "error_pct": r.error_pct} for r in rows]}
    held = sorted({p for pols in by_mode.values() for p in pols})
    if any(len(p) > 1 for p in by_mode.values()) and not any(baseline in p for p in by_mode.values()):
        # else the A/B table would silently vanish
        raise UserError(None, "--baseline", f"expected a policy the inputs hold ({', '.join(held)}), "
                        f"got {baseline!r}")
    for mode, pols in by_mode.items():
        if baseline in pols:
            for policy, res in pols.items():
                if policy != baseline:
                    _ab(run, mode, (baseline, policy), (pols[baseline], res), num_boot, seed, rope,
                        normalise)
    return run


def check_something_compared(run: CompareRun, baseline: str, inputs: list[str] = ()) -> None:
    """Nothing paired or A/B'd: one line (naming an interrupted run-real folder's missing
    policies and the command that resumes it)."""
    if not run.out["fidelity"] and not run.out["ab"]:
        from mtpsim.real.run import unfinished_policies

        by_mode = run.by_mode
        hints = [h for item in inputs if Path(item).is_dir()
                 and (h := unfinished_policies(Path(item))) is not None]
        raise UserError(None, "inputs", f"nothing to compare: expected the same policy in a sim and a "
                        f"real result, or the baseline policy {baseline!r} and another in one mode "
                        f"(found {sorted((m, p) for m in by_mode for p in by_mode[m])})"
                        + "".join(f"; {h}" for h in hints))


def _ab(run: CompareRun, mode: str, names: tuple[str, str], ab: tuple[Result, Result], num_boot: int,
        seed: int, rope: Rope, normalise: bool | str) -> None:
    """One policy against the baseline in one mode, into `run`."""
    from mtpsim.compare import ab_compare

    rep = ab_compare(*ab, num_boot=num_boot, seed=seed, rope=rope, normalise=normalise)
    run.ab.append((mode, rep))
    baseline, policy = names
    if rep.same_program_k is not None:
        run.out["ab"][f"{mode}:{policy}"] = {"baseline": baseline, "policy": policy,
                                             "same_program_at_k": rep.same_program_k}
        return
    run.out["ab"][f"{mode}:{policy}"] = {
        "baseline": baseline, "policy": policy, "noise_floor": rep.noise_floor,
        "num_requests": rep.num_requests, "normalised": normalise,
        "rope": {"timing_pct": rope.timing_pct, "acceptance_length": rope.acceptance_length,
                 "acceptance_points": rope.acceptance_points},
        "rows": [{"metric": r.key, "a": r.a, "b": r.b, "delta": r.delta, "rel_pct": r.rel_pct,
                  "ci": [r.ci_low, r.ci_high] if r.has_ci else None,
                  "ci_unit": "pct" if r.ci_pct else "metric", "rounds": r.rounds,
                  "paired_mean_pct": _finite(r.paired_mean_pct),
                  "verdict": r.verdict or None, "p_above_region": _finite(r.p_above),
                  "p_below_region": _finite(r.p_below),
                  "significant": r.significant, "within_noise": rep.within_noise(r)}
                 for r in rep.rows]}


def compare_sweep(path: Path, baseline: str, num_boot: int,
                  seed: int) -> tuple[list[SweepPointAB], dict[str, Any]]:
    """A real sweep's --out: per point, the A/B on the requests of all repeats pooled, and the
    A/B delta's spread between repeats; and their JSON form."""
    from mtpsim.compare import ab_compare
    from mtpsim.compare_sweep import load_sweep, pooled, repeat_spread

    found: list[SweepPointAB] = []
    out: dict[str, Any] = {}
    for pt in load_sweep(path):
        label = ", ".join(f"{k}={v}" for k, v in pt.values.items()) or pt.point_id
        if baseline not in pt.runs:
            continue
        a_runs = pt.runs[baseline]
        for policy, b_runs in pt.runs.items():
            if policy == baseline:
                continue
            rep = ab_compare(pooled(list(a_runs.values())), pooled(list(b_runs.values())),
                             num_boot=num_boot, seed=seed)
            spread = repeat_spread(a_runs, b_runs)
            found.append(SweepPointAB(label, (len(a_runs), len(b_runs)), rep, spread))
            out[f"{pt.point_id}:{policy}"] = {
                "values": pt.values, "baseline": baseline, "policy": policy,
                "repeats": [len(a_runs), len(b_runs)], "num_requests": rep.num_requests,
                "rows": [{"metric": r.key, "a": r.a, "b": r.b, "delta": r.delta,
                          "ci": [r.ci_low, r.ci_high] if r.has_ci else None,
                          "significant": r.significant} for r in rep.rows],
                "between_repeats": [{"metric": s.metric, "relative": s.relative,
                                     "deltas": s.deltas, "mean": s.mean, "sd": s.sd}
                                    for s in spread]}
    if not out:
        raise UserError(path, None, f"expected a real sweep with the baseline policy {baseline!r} "
                        "and another in some point")
    return found, {"sweep": out}
