"""The run behind `mtpsim run-real`: the flags checked and turned into spec overrides, the
engine's backend and runner chosen, every policy run for real in interleaved rounds (by
mtpsim.real.run) and a --smoke run's checks. `mtpsim.report.real` renders what this returns; the
command only parses, calls and hands over."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtpsim.dataclass import dataclass
from mtpsim.errors import UserError

if TYPE_CHECKING:  # numpy-free at import, so `mtpsim --help` starts fast
    from mtpsim.real.run import RealRun
    from mtpsim.spec import Experiment

# name, label, requests -> a callback (requests done, of) while that policy's round runs
Start = Callable[[str, str, int], Callable[[int, int], None]]
DEFAULT_ENGINE = "reference"  # --engine's default (mtpsim.real.ENGINES lists them all)
MAX_ARRIVAL_SPAN_S = 86_400.0  # a real run's requests arrive within a day of wall clock
SLOW_ARRIVALS_S = 60.0  # arrivals spanning this long are announced before the run


def refuse_plain_decoding(exp: Experiment, command: str) -> None:
    """Real runs measure MTP: plain decoding (k = 0) is simulated only, so far."""
    if exp.k == 0:
        raise UserError(exp.source_of("speculative.num_speculative_tokens"),
                        "speculative.num_speculative_tokens",
                        f"expected >= 1 for {command} (its engines run MTP; k = 0, plain "
                        "decoding, is simulated only: mtpsim simulate / sweep / advise)")


def check_wall_clock(exp: Experiment) -> None:
    """A real run waits for each arrival: a rate whose requests span more than a day (1e-9/s)
    would sit idle, not measure anything."""
    w = exp.workload
    span = w.num_prompts / w.request_rate
    if span > MAX_ARRIVAL_SPAN_S:
        raise UserError(exp.source_of("workload.request_rate", "workload.num_prompts"),
                        "workload.request_rate", f"expected arrivals within "
                        f"{MAX_ARRIVAL_SPAN_S:,.0f} s of wall clock on a real run "
                        f"({w.num_prompts} requests at {w.request_rate:g}/s span {span:.3g} s)")


def arrival_note(exp: Experiment) -> str | None:
    """A run whose arrivals alone take a minute or more says so up front: at request_rate 0.001
    two requests waited ~1,000 s apart, and off a terminal (no bars) nothing was printed."""
    w = exp.workload
    span = w.num_prompts / w.request_rate  # 0 at an infinite rate
    if span < SLOW_ARRIVALS_S:
        return None
    return (f"note: {w.num_prompts} requests at workload.request_rate {w.request_rate:g}/s arrive "
            f"over about {span:,.0f} s ({span / 60:,.0f} min) of each policy's run")


@dataclass(slots=True)
class RealSetup:
    """Everything checked before a real run starts: the spec, where it goes, what is kept."""

    experiment: Path
    engine: str
    exp: Experiment
    out: Path
    real: Any  # mtpsim.real.backend's Backend
    plan: list  # the rounds (mtpsim.real.run.round_plan)
    kept: dict  # policy -> its finished result in --out, skipped
    weights_sha: str | None
    trace: bool
    force: bool
    smoke: bool


@dataclass(slots=True)
class RealOutcome:
    """A finished real run: its state (results, traces) and wall time."""

    setup: RealSetup
    state: RealRun
    wall_s: float


def prepare(experiment: Path, engine: str, *, out: Path | None, sets: list[str], policy: list[str],
            seed: int | None, server: bool, trace: bool, bench_client: str, smoke: bool,
            force: bool, rounds: int | None) -> RealSetup:
    """The backend, the spec under the flags, the refusals and --out checked, the rounds planned
    and the policies already finished in --out found, before any engine starts."""
    from mtpsim.extras import require_engine
    from mtpsim.fileio import output_dir, refuse_other_command_outputs
    from mtpsim.real import backend
    from mtpsim.spec import load_experiment

    real = backend(engine, server)  # an unknown engine, or --server where it always serves: one line
    caps = real.caps
    require_engine(engine, server)
    from mtpsim.spec.paths import command_line_sets

    overrides = command_line_sets(experiment, sets)  # a relative path: from the current folder
    if policy:
        from mtpsim.policies import policy_flag

        overrides.append("policies=" + json.dumps(policy_flag(policy)))
    if seed is not None:
        from mtpsim.runs.simulate import seed_override

        overrides.append(seed_override(seed))
    suffix = "-server" if server else "-smoke" if smoke else ""
    out = out if out is not None else Path("runs") / f"{experiment.stem}-{engine}{suffix}"
    if smoke:
        if not caps.smoke:
            raise UserError(None, "--smoke", "applies to --engine vllm")  # the one with a smoke model
        from mtpsim.vllm_runner import smoke as smoke_run

        trace, force = True, True  # the checks need this run's traces
        overrides = [*smoke_run.overrides((out / "smoke-model").absolute()), *overrides]
    from mtpsim.sweep import with_extended_acceptance

    # a k beyond the spec's rate table: the engine measures acceptance, the table only prices
    # the comparison a simulation of the same spec makes (the last rate repeated, as sweep does)
    overrides, _ = with_extended_acceptance(str(experiment), overrides)
    exp = load_experiment(str(experiment), overrides)
    check_wall_clock(exp)
    refuse_plain_decoding(exp, "run-real")
    real.refuse(exp, exp.policies)  # before any server starts, not an hour in
    if not caps.served and (trace or bench_client != "mtpsim"):
        raise UserError(None, "--trace" if trace else "--bench-client",
                        "applies to --engine vllm or --server runs")
    refuse_other_command_outputs(out, sweep=False)
    output_dir(out, "--out")  # before the run: a finished run must have somewhere to go
    from mtpsim.real import run as real_run

    weights_sha = real_run.weights_sha_of(exp) if caps.weights_by_content else None
    plan = real_run.round_plan(exp, rounds, not caps.rounds, source=experiment)
    kept = {} if force else {name: prev for name in exp.policies if (prev := real_run.finished(
        out / f"{name}.json", caps.mode, name, exp, caps.served, weights_sha, len(plan)))}
    if not force:
        real_run.check_rounds(out, plan, kept, caps.mode, exp, caps.served, weights_sha)
    return RealSetup(experiment, engine, exp, out, real, plan, kept, weights_sha, trace, force, smoke)


def run(setup: RealSetup, bench_client: str, probe_on: bool,
        bars: Callable[[], AbstractContextManager[Start]], say: Callable[[str], None],
        interrupted: Callable[[RealRun], BaseException], level_every: int = 0) -> RealOutcome:
    """Every policy not kept run in the planned rounds; Ctrl-C raises `interrupted(state)`.
    `level_every` > 0: the level probe reads densely (mtpsim.engine.level.Sampling.dense)."""
    from mtpsim.real import run as real_run

    caps = setup.real.caps
    level: Any = probe_on and caps.level
    if level and level_every > 0:
        from mtpsim.engine.level import Sampling

        level = Sampling.dense(level_every)
    runner = setup.real.runner(setup.out, setup.trace, bench_client, smoke=setup.smoke)
    if setup.smoke:
        from mtpsim.vllm_runner import smoke as smoke_run

        smoke_run.prepare_model((setup.out / "smoke-model").absolute())
    if caps.note is not None and (note := caps.note(setup.exp)):
        say(note)
    if note := arrival_note(setup.exp):
        say(note)
    state = real_run.RealRun(setup.exp, setup.out, setup.plan)
    # recorded in each result, so a resume command read from it repeats them (a smoke run's: none)
    flags = None if setup.smoke else real_run.run_flags(setup.trace, bench_client, level_every, probe_on)
    t0 = time.perf_counter()
    try:
        with bars() as start:
            real_run.run_policies(
                state, runner, mode=caps.mode, served=caps.served, weights_sha=setup.weights_sha,
                kept=setup.kept, force=setup.force, probe=real_run.Probe(enabled=probe_on and caps.probe),
                level=level, start=start, say=say, flags=flags)
    except KeyboardInterrupt:
        raise interrupted(state) from None
    return RealOutcome(setup, state, time.perf_counter() - t0)


def smoke_checks(outcome: RealOutcome) -> Iterator[Any]:
    """A --smoke run's checks (mtpsim.vllm_runner.smoke), per policy."""
    from mtpsim.vllm_runner import smoke as smoke_run

    state = outcome.state
    for name, res in state.results.items():
        yield from smoke_run.check_policy(name, res, state.traces[name], outcome.setup.exp.k)


def write_smoke(checks: list, out: Path) -> None:
    """DIR/smoke.json."""
    from mtpsim.vllm_runner import smoke as smoke_run

    smoke_run.write_report(checks, out / "smoke.json")
