"""`mtpsim run-real`: run the experiment's workload for real, once per policy -> Result + Trace."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from mtpsim.errors import ResultError, UserError
from mtpsim.fileio import output_dir
from mtpsim.real.backend import ENGINES

if TYPE_CHECKING:  # numpy-free at import, so `mtpsim --help` starts fast
    from mtpsim.result import Result
    from mtpsim.spec import Experiment

if TYPE_CHECKING:
    pass

console = Console()
err_console = Console(stderr=True)

DEFAULT_ENGINE = "reference"  # --engine's default (mtpsim.real.ENGINES lists them all)


# Spec entries that do not change one policy's run (which policies run, labels, and the
# simulator's acceptance model, priors and noise model, which a real run never reads).
_NOT_SETTINGS = ("policies", "description", "source", "overrides", "acceptance", "uncertainty")


def _settings(spec: dict) -> dict:
    return {k: v for k, v in json.loads(json.dumps(spec)).items() if k not in _NOT_SETTINGS}


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


def _weights_sha(exp: Experiment) -> str | None:
    """The content hash of the reference weights the run will load (a bad path: one line);
    None for the server's seeded random-init test model, which has no file (its name and the
    seed, both in the spec, say what it is)."""
    from mtpsim.engine.runner import weights_path
    from mtpsim.engine.weights import fingerprint
    from mtpsim.serve_reference.server import TINY_RANDOM

    if exp.reference.weights == TINY_RANDOM:
        return None
    return fingerprint(weights_path(exp))


def _finished(path: Path, mode: str, policy: str, exp: Experiment, served: bool,
              weights_sha: str | None = None, rounds: int = 1) -> Result | None:
    """A complete result of the same run already at `path` (a rerun keeps it), None if there is
    none; a result of other settings (spec, weights, engine, policy) is refused, not resumed.
    Reference weights are compared by content (`weights_sha`) when the result records it: the
    same file moved is the same run, a file retrained in place is not."""
    from mtpsim.result import load_result

    if not path.is_file():
        return None
    try:
        res = load_result(path)
    except ResultError:
        return None  # not a finished result (writes are atomic): rerun the policy
    diff = ([] if res.mode == mode else ["engine"]) + ([] if res.policy == policy else ["policy"])
    diff += [] if ("server_argv" in res.extra) == served else ["--server"]
    old, new = _settings(res.spec), _settings(exp.to_dict())
    if weights_sha is not None and "weights_sha256" in res.extra:
        for spec in (old, new):
            spec.get("reference", {}).pop("weights", None)
        diff += [] if res.extra["weights_sha256"] == weights_sha else ["reference weights (content)"]
    diff += _changed(old, new)
    had = len(res.extra.get("rounds") or [None])
    diff += [] if had == rounds else [f"rounds ({had} there, {rounds} now)"]
    if diff:
        shown = ", ".join(diff[:4]) + (f" and {len(diff) - 4} more" if len(diff) > 4 else "")
        raise UserError(path, None, f"expected a result of the same settings to resume, but "
                        f"{shown} differ; rerun with --force to replace it, or choose another --out")
    return res


def _resume(experiment: Path, engine: str, out: Path, sets: list[str] | None, policies: list[str] | None,
            seed: int | None, server: bool, trace: bool, bench_client: str,
            rounds: int | None = None) -> list[str]:
    """The command that resumes this run: the same options (finished policies are skipped)."""
    from mtpsim.report.interrupt import resume_argv

    opts = ["--engine", engine] if engine != DEFAULT_ENGINE else []
    opts += [x for s in sets or [] for x in ("--set", s)]
    opts += [x for p in policies or [] for x in ("-p", p)]
    opts += ["--seed", str(seed)] if seed is not None else []
    opts += ["--server"] * server + ["--trace"] * trace
    opts += ["--bench-client", bench_client] if bench_client != "mtpsim" else []
    opts += ["--rounds", str(rounds)] if rounds is not None else []
    return resume_argv("run-real", str(experiment), str(out), opts)


def _interrupted(policies: tuple[str, ...], results: dict[str, Result], progress: dict[str, int],
                 num_prompts: int, out: Path, resume: list[str],
                 done_rounds: dict[str, list[Path]] | None = None, n_rounds: int = 1) -> str:
    from mtpsim.report.interrupt import interrupted_line

    if n_rounds > 1:  # a round on disk is kept; a policy is complete once all its rounds are
        done_rounds = done_rounds or {}
        kept = [f"{p} ({out / f'{p}.json'})" if p in results else
                f"{p} rounds {len(done_rounds[p])}/{n_rounds} ({out / 'rounds'})"
                for p in policies if p in results or done_rounds.get(p)]
        lost = [f"{p} (round in progress, {progress[p]} requests done; a round's result is written "
                "only once it completes)" if p in progress else f"{p} (rest not started)"
                for p in policies if p not in results]
        return interrupted_line(kept, lost, resume)
    kept = [f"{p} ({out / f'{p}.json'})" for p in policies if p in results]
    lost = [f"{p} (in progress, {progress[p]}/{num_prompts} requests done; a policy's result is "
            "written only once it completes)" if p in progress else f"{p} (not started)"
            for p in policies if p not in results]
    return interrupted_line(kept, lost, resume)


def refuse_plain_decoding(exp: Experiment, command: str) -> None:
    """Real runs measure MTP: plain decoding (k = 0) is simulated only, so far."""
    if exp.k == 0:
        raise UserError(exp.source, "speculative.num_speculative_tokens",
                        f"expected >= 1 for {command} (its engines run MTP; k = 0, plain "
                        "decoding, is simulated only: mtpsim simulate / sweep / advise)")


def _round_plan(exp: Experiment, rounds: int | None, served: bool,
                source: Path | None = None) -> list[tuple[tuple[str, ...], range]]:
    """(policies in order, request indices) per round; one round for a served run, whose
    server serves one policy per start."""
    from mtpsim import rounds as rounds_mod

    n = exp.workload.num_prompts
    if served:
        if rounds not in (None, 1):
            raise UserError(None, "--rounds", "applies to the in-process reference engine (a served "
                            "run starts one server per policy); pass --rounds 1 or drop --server")
        r = 1
    else:
        conc = min(exp.workload.max_concurrency or n, exp.engine.max_num_seqs, n)
        r = rounds if rounds is not None else rounds_mod.auto_rounds(n, conc)
        if not 1 <= r <= n:
            raise UserError(None, "--rounds", f"expected 1 to {n} (the workload's requests), got {r}")
    return list(zip(rounds_mod.order(exp.policies, r), rounds_mod.chunks(n, r), strict=True))


def _round_path(out: Path, r: int, n_rounds: int, policy: str) -> Path:
    return out / f"{policy}.json" if n_rounds == 1 else out / "rounds" / f"r{r:02d}" / f"{policy}.json"


def _finished_round(path: Path, mode: str, policy: str, exp: Experiment, served: bool,
                    weights_sha: str | None, r: int, n_rounds: int) -> tuple[Result, object] | None:
    """A complete round of the same run at `path` with its trace, or None (then it reruns)."""
    from mtpsim.trace import read_trace

    res = _finished(path, mode, policy, exp, served, weights_sha, rounds=1)
    if res is None:
        return None
    where = res.extra.get("round", {})
    if where.get("index") != r or where.get("of") != n_rounds:
        raise UserError(path, "extra.round", f"expected round {r + 1} of {n_rounds}, found "
                        f"{where}; rerun with --force or choose another --out")
    trace_path = path.with_suffix(".trace.jsonl")
    return (res, read_trace(trace_path)) if trace_path.is_file() else None


def _pool_rounds(parts: list[tuple[Result, object]], out: Path, name: str) -> tuple[Result, object]:
    """Write the policy's pooled result and trace (after its last round) and return them."""
    from mtpsim import rounds as rounds_mod

    res = rounds_mod.pool([p[0] for p in parts])
    tr = rounds_mod.pool_traces([p[1] for p in parts])
    tr.write(out / f"{name}.trace.jsonl")
    res.write(out / f"{name}.json")
    return res, tr


class _Probe:
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


def run_real(
    experiment: Annotated[Path, typer.Argument(help="Experiment TOML, e.g. experiments/reference-cpu.toml.")],
    engine: Annotated[str, typer.Option(help=f"Real engine: {', '.join(ENGINES)}.")] = DEFAULT_ENGINE,
    out: Annotated[Path | None, typer.Option(
        help="Folder for DIR/<policy>.json results and DIR/<policy>.trace.jsonl traces "
        "(default: runs/<experiment>-<engine>). Policies with a result there are skipped.")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a spec field: section.key=value (repeatable), e.g. "
        "--set workload.num_prompts=8 --set reference.threads=1.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Run only these policies (repeatable; default: the spec's).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed (default: the spec's).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rerun finished policies.")] = False,
    server: Annotated[bool, typer.Option(
        "--server", help="Reference engine behind `mtpsim serve-reference`, measured by the "
        "benchmark client over HTTP, exactly as --engine vllm runs.")] = False,
    trace: Annotated[bool, typer.Option(
        "--trace", help="vLLM: eager mode; the plugin records top-k overlap (fresh top-k "
        "computed in shadow) and acceptance per draft step. Perturbs timing.")] = False,
    bench_client: Annotated[str, typer.Option(
        help="vLLM: 'mtpsim' (built-in client) or 'vllm' (`vllm bench serve`, its JSON "
        "imported).")] = "mtpsim",
    smoke: Annotated[bool, typer.Option(
        "--smoke", help="vLLM: first contact with a GPU node, no download: a shrunken "
        "DeepSeek-V3.2 shipped with mtpsim, random weights (--load-format dummy), 1 GPU, 8 "
        "requests per policy, trace mode; checks the plugin engaged, indexer calls per draft "
        "step (k under fresh, 1 under share), compaction, complete traces and counters that "
        "agree. Writes DIR/smoke.json; exit 1 if a check fails.")] = False,
    rounds: Annotated[int | None, typer.Option(
        help="Reference engine: split the requests into R rounds and run every policy in each, "
        "in A B / B A order, so machine drift cancels in paired deltas (DIR/rounds/rNN/). "
        "Default: as many rounds as give each a full batch, at most 8.")] = None,
    probe_on: Annotated[bool, typer.Option(
        "--probe/--no-probe", help="Time the fixed machine-speed probe (a few seconds, one "
        "thread) before and after every policy's round; recorded in the results.")] = True,
) -> None:
    """Run the experiment's workload on a real engine for each policy and write a result in the
    same schema as [cyan]mtpsim simulate[/cyan] (with per-request records) plus a trace.

    The reference engine is a small DSA + MTP model (trained weights shipped with mtpsim) with
    vLLM MRV2's speculative decoding, on the CPU or a CUDA GPU ([cyan]\\[reference][/cyan] section).
    Precedence: flag > --set > experiment file > preset > default.
    Example: [cyan]mtpsim run-real experiments/reference-cpu.toml --out runs/ref-cpu[/cyan]
    """
    from mtpsim.extras import require_engine
    from mtpsim.real import backend
    from mtpsim.spec import load_experiment

    real = backend(engine, server)  # an unknown engine, or --server where it always serves: one line
    caps = real.caps

    require_engine(engine, server)
    overrides = list(set_ or [])
    if policy:
        overrides.append("policies=" + json.dumps(policy))
    if seed is not None:
        overrides.append(f"seed={seed}")
    suffix = "-server" if server else "-smoke" if smoke else ""
    out = out if out is not None else Path("runs") / f"{experiment.stem}-{engine}{suffix}"
    if smoke:
        if not caps.smoke:
            raise UserError(None, "--smoke", "applies to --engine vllm")  # the one with a smoke model
        from mtpsim.vllm_runner import smoke as smoke_run

        trace, force = True, True  # the checks need this run's traces
        overrides = [*smoke_run.overrides((out / "smoke-model").absolute()), *overrides]
    exp = load_experiment(str(experiment), overrides)
    refuse_plain_decoding(exp, "run-real")
    real.refuse(exp, exp.policies)  # before any server starts, not an hour in
    served = caps.served
    if not served and (trace or bench_client != "mtpsim"):
        raise UserError(None, "--trace" if trace else "--bench-client",
                        "applies to --engine vllm or --server runs")
    output_dir(out, "--out")  # before the run: a finished run must have somewhere to go
    mode = caps.mode
    weights_sha = _weights_sha(exp) if caps.weights_by_content else None
    n_rounds = len(_round_plan(exp, rounds, not caps.rounds, source=experiment))
    kept = {} if force else {name: prev for name in exp.policies if (prev := _finished(
        out / f"{name}.json", mode, name, exp, served, weights_sha, n_rounds))}
    runner = real.runner(out, trace, bench_client, smoke=smoke)
    if smoke:
        smoke_run.prepare_model((out / "smoke-model").absolute())

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from mtpsim import rounds as rounds_mod

    plan = _round_plan(exp, rounds, not caps.rounds, source=experiment)
    results: dict[str, Result] = {}
    traces: dict[str, object] = {}
    progress: dict[str, int] = {}
    done_rounds: dict[str, list[Path]] = {}
    t0 = time.perf_counter()
    probe = _Probe(enabled=probe_on and caps.probe)
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err_console, transient=True) as bar:
            for name, prev in kept.items():
                results[name] = prev
                err_console.print(f"{name}: kept {out / f'{name}.json'} (use --force to rerun)",
                                  highlight=False)
            by_round: dict[str, list[tuple[Result, object]]] = {p: [] for p in exp.policies if p not in kept}
            for r, (names, chunk) in enumerate(plan):
                for position, name in enumerate(n for n in names if n not in kept):
                    res_path = _round_path(out, r, len(plan), name)
                    prev_round = None if force or len(plan) == 1 else _finished_round(
                        res_path, mode, name, exp, served, weights_sha, r, len(plan))
                    if prev_round is not None:
                        by_round[name].append(prev_round)
                        done_rounds.setdefault(name, []).append(res_path)
                        continue
                    label = f"{engine}: {name}" + (f" round {r + 1}/{len(plan)}" if len(plan) > 1 else "")
                    task = bar.add_task(label, total=len(chunk))
                    progress[name] = 0

                    def tick(done: int, _n: int, task=task, name=name) -> None:
                        progress[name] = done
                        bar.update(task, completed=done)

                    before = probe.reading()
                    if len(plan) == 1:
                        result, run_trace = runner(exp, name, tick)
                    else:
                        result, run_trace = runner(exp, name, tick, requests=chunk)
                    after = probe.reading(fresh=True)
                    del progress[name]
                    if weights_sha is not None:
                        result.extra["weights_sha256"] = weights_sha
                    result.extra["round"] = {"index": r, "of": len(plan), "position": position,
                                             "requests": [chunk.start, chunk.stop]}
                    if before is not None:
                        result.extra["probe"] = {"before": before, "after": after}
                        run_trace.meta["probe"] = [before, after]
                    if len(plan) == 1:
                        result.extra["rounds"] = [rounds_mod.summary(result)]
                        results[name], traces[name] = result, run_trace
                    else:
                        res_path.parent.mkdir(parents=True, exist_ok=True)
                    run_trace.write(res_path.with_suffix(".trace.jsonl"))
                    result.write(res_path)  # last, so a result on disk means the round is complete
                    by_round[name].append((result, run_trace))
                    done_rounds.setdefault(name, []).append(res_path)
            if len(plan) > 1:
                for name, parts in by_round.items():
                    results[name], traces[name] = _pool_rounds(parts, out, name)
    except KeyboardInterrupt:
        err_console.print(_interrupted(exp.policies, results, progress, exp.workload.num_prompts, out,
                                       _resume(experiment, engine, out, set_, policy, seed, server, trace,
                                               bench_client, rounds), done_rounds, len(plan)),
                          highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(130) from None
    wall = time.perf_counter() - t0
    results = {p: results[p] for p in exp.policies if p in results}

    from mtpsim.report import phase_table, pr_table, summary_lines
    from mtpsim.report.fit import print_table
    from mtpsim.report.titles import setup_title

    print_table(console, pr_table(results, title=setup_title(exp, engine, own_model=caps.own_model)))
    for line in summary_lines(results):
        console.print(line, highlight=False)
    if any(res.phases for res in results.values()):  # served runs time no engine phases
        print_table(console, phase_table(results))
    for name, res in results.items():
        x = res.extra
        if x.get("sharing_engaged"):
            console.print(f"{name}: {x['sharing_engaged']}", highlight=False)
        if "mtp_indexer_calls_per_step" not in x:
            continue
        share = x.get("indexer_share_of_draft_decode")
        ov = ", ".join("-" if o is None else f"{o:.3f}" for o in x.get("mean_overlap_per_step", []))
        console.print(f"{name}: {res.get('output_throughput', float('nan')):.1f} output tok/s, "
                      f"MTP indexer calls per draft step {x.get('mtp_indexer_calls_per_step')}, "
                      f"top-k overlap at steps 1.. [{ov}], indexer share of draft steps >= 1: "
                      f"{'-' if share is None else f'{100 * share:.1f}%'}", highlight=False)
    console.print(f"{len(results)} policies in {wall:.1f} s wall; results and traces in {out}/",
                  highlight=False)
    if len(plan) > 1:
        console.print(f"{len(plan)} interleaved rounds (policy order reversed every other round; "
                      f"each round's files in {out / 'rounds'}/); paired deltas: mtpsim compare {out}",
                      highlight=False)
    if smoke:
        _smoke_report(results, traces, exp.k, out)


def _smoke_report(results: dict[str, Result], traces: dict, k: int, out: Path) -> None:
    from mtpsim.vllm_runner import smoke as smoke_run

    checks = [c for name, res in results.items()
              for c in smoke_run.check_policy(name, res, traces[name], k)]
    for c in checks:
        console.print(f"[{'green' if c.ok else 'bold red'}]{'OK' if c.ok else 'FAIL':<4}[/] "
                      f"{c.policy:<6} {c.name}: {c.detail}", highlight=False, soft_wrap=True)
    console.print(smoke_run.NOTE, highlight=False)
    smoke_run.write_report(checks, out / "smoke.json")
    if not all(c.ok for c in checks):
        raise typer.Exit(1)
