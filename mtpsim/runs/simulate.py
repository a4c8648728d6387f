"""The run behind `mtpsim simulate`: its flags checked and turned into spec overrides, a fit of
`--trace` files, every policy simulated. `mtpsim.report.simulate` renders what this returns;
the command only parses, calls and hands over."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from mtpsim.dataclass import dataclass

if TYPE_CHECKING:  # numpy-free at import, so `mtpsim --help` starts fast
    from mtpsim.calibration import Calibration
    from mtpsim.result import Result
    from mtpsim.spec import Experiment

# policy, its requests -> a callback (requests done, of) while it simulates
PolicyProgress = Callable[[str, int], Callable[[int, int], None]]


@dataclass(slots=True)
class SimulateRun:
    """Every policy of one experiment simulated, and what the report says beside the tables."""

    experiment: str  # the path as given
    exp: Experiment  # the validated spec, overrides applied
    results: dict[str, Result]
    wall_s: float
    calibration: Calibration | None = None  # fitted from --trace files
    notes: list[str] = field(default_factory=list)  # what the trace fit left out or filled in
    overridden: bool = False  # a flag or --set changed what the experiment file simulates
    setup_changed: list[str] = field(default_factory=list)  # --set texts that change the setup
    warnings: list[str] = field(default_factory=list)  # a calibration far from the spec (stderr)

    def write(self, out: Path) -> list[Path]:
        """One result per policy, DIR/<policy>.json (atomically, with per-request records)."""
        paths = [out / f"{name}.json" for name in self.results]
        for path, res in zip(paths, self.results.values(), strict=True):
            res.write(path)
        return paths


def seed_override(seed: int) -> str:
    """The --seed flag as a `--set` text; a negative seed is refused naming the flag (the spec's
    own check would name the --set override the user never typed), and so is one longer than a
    `--set` integer may be (19 digits)."""
    if not 0 <= seed < 10**19:
        from mtpsim.errors import UserError

        raise UserError(None, "--seed", f"expected an integer >= 0, got {seed}" if seed < 0 else
                        f"expected an integer of at most 19 digits, got {seed}")
    return f"seed={seed}"


def overrides(sets: Sequence[str], policy: Sequence[str], seed: int | None,
              expected: bool = False) -> list[str]:
    """The flags as `--set` texts, after the user's own: --policy, --seed, --expected."""
    from mtpsim.policies import policy_flag

    out = list(sets)
    if policy:
        out.append("policies=" + json.dumps(policy_flag(list(policy))))
    if seed is not None:
        out.append(seed_override(seed))
    if expected:
        out.append('acceptance.mode="expected"')
    return out


def check_flags(*, trace: Sequence[Path], plot: Path | None, expected: bool, bootstrap: int,
                save_calibration: Path | None, uncertainty: int | None,
                metrics: str | None, indexer_keys: str = "own") -> None:
    """Flags that need or exclude each other, and the plotting extra: a UserError before work."""
    from mtpsim.errors import UserError

    if plot is not None:
        from mtpsim.extras import require

        require("--plot", "plots")
    if metrics is not None and uncertainty is None:
        raise UserError(None, "--metrics", "expected with --uncertainty (a plain simulate prints "
                        "every figure in its table and --json)")
    if indexer_keys not in ("own", "padded"):  # mtpsim.models.cost.INDEXER_KEYS (numpy-free here)
        raise UserError(None, "--indexer-keys", f"expected own or padded, got {indexer_keys!r}")
    if indexer_keys != "own" and not trace:
        raise UserError(None, "--indexer-keys", "expected --trace files to fit")
    if uncertainty is not None:
        if trace or plot is not None or expected:
            raise UserError(None, "--uncertainty", "expected without --trace, --plot and --expected")
        return
    if bootstrap and not trace:
        raise UserError(None, "--bootstrap", "expected --trace files to refit")
    if save_calibration is not None and not trace:
        raise UserError(None, "--save-calibration", "expected --trace files to fit")
    seen: dict[Path, Path] = {}
    for t in trace:  # one file given twice counted its events twice: a fit surer than its data
        key = t.resolve() if t.exists() else t
        if key in seen:
            raise UserError(None, "--trace", f"expected each trace once, got {t} after {seen[key]} "
                            "(the same file): its events would count twice")
        seen[key] = t


def check_outputs(out: Path | None, plot: Path | None, save_calibration: Path | None) -> None:
    """Every output folder and file writable before anything runs."""
    if out is None and plot is None and save_calibration is None:
        return  # a plain run writes nothing (and leaves mtpsim.fileio unimported)
    from mtpsim.fileio import output_dir, output_file

    for folder, flag in ((out, "--out"), (plot, "--plot")):
        if folder is not None:
            output_dir(folder, flag)
    if out is not None:
        from mtpsim.fileio import refuse_other_command_outputs

        refuse_other_command_outputs(out, sweep=False)
        refuse_real_results(out)
    if save_calibration is not None:
        output_file(save_calibration, "--save-calibration")


def refuse_real_results(out: Path) -> None:
    """A real run's result where simulate writes DIR/POLICY.json (`simulate --out` given a
    run-real --out folder): one line before anything runs, the file kept, --force or not."""
    from mtpsim.errors import UserError

    for path, res in kept_results(out):
        if res.mode != "simulate":
            raise UserError(path, None, f"expected no result here, or a simulated one to replace, "
                            f"got a real run's ({res.mode}): simulate --out would write over it; "
                            f"choose another --out (mtpsim compare SIMDIR {out} then pairs them)")


def kept_results(out: Path) -> list[tuple[Path, Result]]:
    """The results already in DIR/POLICY.json (a file that does not read as one is left out:
    it is replaced, as before)."""
    from mtpsim.errors import ResultError
    from mtpsim.policies import NO_MTP, POLICIES
    from mtpsim.result import load_result

    found = []
    for name in (*POLICIES, NO_MTP):
        path = out / f"{name}.json"
        if path.is_file():
            try:
                found.append((path, load_result(path)))
            except ResultError:
                continue
    return found


def refuse_other_settings(out: Path, experiment: str, over: list[str], force: bool) -> None:
    """A simulated DIR/POLICY.json of other settings (another seed, workload, model, ...) than
    this run's: one line before anything runs, naming the file and what differs, unless --force.
    It was replaced without a word, and a `-p` run left DIR holding results of two settings that
    `compare` would pair. One of the same settings (label, runner and prior fields aside, which a
    simulation does not read) is replaced, as before: rerunning it remakes it."""
    if force:
        return
    kept = [(p, r) for p, r in kept_results(out) if r.mode == "simulate"]
    if not kept:
        return
    from mtpsim.errors import UserError
    from mtpsim.spec import load_experiment

    now = simulated_settings(load_experiment(experiment, over).to_dict())
    for path, res in kept:
        diff = settings_diff(simulated_settings(res.spec), now) if res.spec else \
            ["its settings: not recorded (a result written without its spec)"]
        if diff:
            more = f"; and {len(diff) - 3} more" if len(diff) > 3 else ""
            raise UserError(path, None, f"expected a simulated result of these settings to "
                            f"replace, got one of other settings ({'; '.join(diff[:3])}{more}): "
                            f"simulate --out would write over it; choose another --out, or add "
                            f"--force to replace it")


def simulated_settings(spec: dict) -> dict[str, object]:
    """A result's spec (`Experiment.to_dict()`) as dotted keys, less what a simulation does not
    read (label, runner and prior fields; where the file was and its --set texts) and the policy
    list (each file holds one policy)."""
    from mtpsim.spec.roles import without_roles

    tree = {k: v for k, v in spec.items() if k not in ("source", "overrides", "policies")}
    flat: dict[str, object] = {}
    for key, value in without_roles(tree, ("label", "runner", "prior")).items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def settings_diff(there: dict[str, object], now: dict[str, object]) -> list[str]:
    """What differs, one text per field: `workload.num_prompts 256 there, 64 now`."""
    def shown(d: dict[str, object], key: str) -> str:
        return json.dumps(d[key]) if key in d else "unset"

    keys = [k for k in {**there, **now} if there.get(k, ...) != now.get(k, ...)]
    return [f"{k} {shown(there, k)} there, {shown(now, k)} now" for k in keys]


def fit(trace: Sequence[Path], bootstrap: int = 0, save_to: Path | None = None,
        normalise: str | None = None, indexer_keys: str = "own",
        draft_calls: str = "shared") -> Calibration:
    """Acceptance, top-k overlap and step cost fitted to the traces (with `bootstrap` refits),
    written to `save_to` if given; `normalise` ("level", "probe"): every trace first put on the
    traces' median figure (mtpsim.calibration.normalise), the refits too; `indexer_keys` ("own",
    "padded"): how the step cost counts the indexer's keys, the refits too (the file records it
    and its pricing follows it: mtpsim.models.cost.padded); `draft_calls` ("shared", "prompt"):
    how the step cost prices the draft phases' calls (mtpsim.models.cost.DRAFT_CALLS), the refits too."""
    from mtpsim.calibration.traces import fit_from_traces

    calibration = fit_from_traces(list(trace), normalise=normalise, indexer_keys=indexer_keys,
                                  draft_calls=draft_calls)
    if bootstrap:
        from mtpsim.trace import read_trace
        from mtpsim.uncertainty.bootstrap import with_bootstrap

        traces = [read_trace(p) for p in trace]
        if normalise is not None:
            from mtpsim.calibration.normalise import normalised

            traces, _ = normalised(traces, normalise)
        calibration = with_bootstrap(calibration, traces, bootstrap)
    if save_to is not None:
        calibration.write(save_to)
    return calibration


def simulate(experiment: str, sets: Sequence[str] = (), policy: Sequence[str] = (),
             seed: int | None = None, expected: bool = False,
             calibration: Calibration | None = None,
             progress: PolicyProgress | None = None, records: bool = True) -> SimulateRun:
    """Simulate every policy of the experiment under the flags; with `calibration` (a trace fit)
    in place of the spec's acceptance and cost models, for the policies the traces can price.
    `records=False`: the results hold metrics only (no per-request records, no spec copy), all
    that the printed tables read."""
    from mtpsim.spec.roles import setup_overrides, simulated_overrides

    over, k_notes = overrides(sets, policy, seed, expected), ()
    if any(o.startswith("speculative.num_speculative_tokens=") for o in over):
        from mtpsim.sweep import with_extended_acceptance  # a plain simulate stays light

        over, k_notes = with_extended_acceptance(experiment, over)
    # a --set of a description or a runner field changes nothing simulated: the file's saved
    # interval still holds (mtpsim.uncertainty.saved)
    overridden = bool(simulated_overrides(over)) or calibration is not None
    notes: list[str] = list(k_notes)
    if calibration is not None:
        calibration, notes, over = fit_what_the_traces_hold(calibration, experiment, over,
                                                            bool(policy))
    t0 = time.perf_counter()
    exp, results = run_policies(experiment, over, progress, calibration, records)
    return SimulateRun(experiment, exp, results, time.perf_counter() - t0, calibration, notes,
                       overridden, setup_overrides(list(sets)), far_calibration(exp, calibration))


def far_calibration(exp: Experiment, calibration: Calibration | None) -> list[str]:
    """The warning line when the calibration that priced the run (a --trace fit, else the
    spec's `[calibration] file`) was measured far from the spec: another machine than its GPUs,
    or well outside its range (mtpsim.uncertainty.domain.calibration_warning); none without one."""
    if calibration is None and not exp.calibration.file:
        from mtpsim.spec.sections import SCHEDULERS

        if SCHEDULERS[exp.engine.scheduler].on_host:  # priced on a GPU preset, not on its host
            return [f"the reference engine's steps are priced by the roofline on "
                    f"{exp.hardware.name or exp.hardware.preset} (hardware.preset), not on the host "
                    "a run-real of this spec runs it on (its CPU, or its GPU with reference.device); "
                    "for its own timings, fit them from its traces (--trace) or a [calibration] file"]
        return []  # the roofline: nothing imported (a plain simulate stays light)
    if calibration is None:
        from mtpsim.models.build import read_experiment_calibration

        calibration = read_experiment_calibration(exp)
    from mtpsim.uncertainty.domain import calibration_warning

    line = calibration_warning(exp, calibration)
    return [line] if line else []


def run_policies(exp_path: str, overrides: list[str], progress: PolicyProgress | None = None,
                 calibration: Calibration | None = None,
                 records: bool = True) -> tuple[Experiment, dict[str, Result]]:
    """Load the experiment and simulate each of its policies; `calibration` (fitted from traces)
    replaces the spec's acceptance and cost models; `records`: as `simulate`'s."""
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    exp = load_experiment(exp_path, overrides)
    results: dict[str, Result] = {}
    for policy in exp.policies:
        tick = None if progress is None else progress(policy, exp.workload.num_prompts)
        results[policy] = simulate(exp, policy, progress=tick, calibration=calibration, records=records)
    return exp, results


def fit_what_the_traces_hold(cal: Calibration, path: str, overrides: list[str],
                             chosen: bool) -> tuple[Calibration, list[str], list[str]]:
    """Traces of a subset of the spec's policies: the others take their overlap from the spec
    (said in a note), and those only their own traces can fit are left out (said too), or
    refused when the user chose them with --policy."""
    from mtpsim.calibration.partial import fill_from_spec
    from mtpsim.errors import UserError
    from mtpsim.spec import load_experiment

    exp = load_experiment(path, overrides)
    cal, notes, left_out = fill_from_spec(cal, exp)
    if left_out:
        if chosen or len(left_out) == len(exp.policies):
            raise UserError(None, "--trace", f"expected a trace of each policy to simulate: "
                            f"{'; '.join(left_out)}")
        kept = [p for p in exp.policies if not any(x.startswith(f"{p} (") for x in left_out)]
        notes.append(f"left out: {'; '.join(left_out)}")
        overrides = [*overrides, "policies=" + json.dumps(kept)]
    return cal, notes, overrides
