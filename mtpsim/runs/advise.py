"""The run behind `mtpsim advise`: the deployment file read, every cell simulated on the
executor (mtpsim.uncertainty.advise), and, where no choice is robust, the measurement that would
decide it written as an experiment file. mtpsim.report.advise renders what this returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass

PROB = 0.9  # the intervals' probability


@dataclass(slots=True)
class AdviseRun:
    """A deployment's advice and what the report says about it."""

    dep: Any  # mtpsim.uncertainty.advise.Deployment
    advice: Any  # mtpsim.uncertainty.advise.Advice
    prob: float
    rows: list[dict[str, Any]]  # one per k x policy
    recommendation: tuple  # (k, policy, gain interval): what to deploy
    best_median: tuple  # (k, policy, gain interval, robust): the best median gain, a candidate
    doubt: dict | None  # no robust choice: why, and the measurement (point file, command)


def check_plot(dep: Any, deployment: Path) -> None:
    """--plot draws share vs fresh per k: refused before any draw when share does not run."""
    if "share" not in dep.policies:
        from mtpsim.errors import UserError

        raise UserError(None, "--plot", f"draws share vs fresh, but {deployment}'s [advise] "
                        f"policies are {', '.join(dep.policies)} alone: add share there or drop --plot")


def load(deployment: Path, draws: int | None = None, max_draws: int | None = None) -> Any:
    """The deployment file, validated; `draws` and `max_draws` in place of its [advise] ones.
    The first stage runs `draws` rounded up to R replicates x a power of two (R = 16, or the
    draws below 16); each later stage doubles it while the total stays within max_draws. A
    --draws without --max-draws is a fixed budget: one stage."""
    from mtpsim.uncertainty.advise import first_stage, load_deployment, rounded
    from mtpsim.uncertainty.limits import check_draws

    dep = load_deployment(deployment)
    if draws is not None:
        check_draws(draws, "--draws")
        dep = replace(dep, draws=draws, max_draws=first_stage(draws),
                      cap_from="--draws without --max-draws, one stage")
    if max_draws is not None:
        check_draws(max_draws, "--max-draws")
        first = first_stage(dep.draws)
        if max_draws < first:
            from mtpsim.errors import UserError

            how = f", run as {rounded(dep.draws)}" if first != dep.draws else ""
            raise UserError(None, "--max-draws", f"expected at least the first stage's {first:,} "
                            f"draws (--draws or [advise] draws {dep.draws:,}{how}), got {max_draws:,}")
        dep = replace(dep, max_draws=max_draws, cap_from="--max-draws")
    return dep


def advise(dep: Any, jobs: int, point_dir: Path,
           progress: Callable[[int, int], None] | None = None, prob: float = PROB) -> AdviseRun:
    """Every cell on the executor, the rows and the recommendation; where it is not robust, the
    deciding measurement's experiment file written to `point_dir` and its command."""
    from mtpsim.uncertainty.advise import advise as run_advise

    adv = run_advise(dep, jobs, progress=progress)
    rows, recommendation, best = adv.rows(prob), adv.recommendation(prob), adv.best_median(prob)
    why = doubt(adv, prob)
    if why is not None:
        from mtpsim.uncertainty import sensitivity as sens

        why["point"] = str(write_point(dep, why, point_dir))
        why["command"] = sens.command_for(why.pop("group"), why["point"], False)
    return AdviseRun(dep, adv, prob, rows, recommendation, best, why)


def doubt(adv: Any, prob: float) -> dict | None:
    """When the best median (k, policy) is not robust: its gain, why its interval spans 0 (the
    parameters that drive it, the extrapolation that widens it) and the exact command of the
    measurement that would decide it, at the context where the answer is widest."""
    import numpy as np

    from mtpsim.uncertainty import sensitivity as sens

    k, p, iv, robust = adv.best_median(prob)
    if robust:
        return None
    best = adv.best_fresh()
    y = adv.gain(k, p).mean(axis=1)  # per draw, over its discrepancy scores
    inputs = {n: np.array([d.unit[n] for d in adv.draws]) for n in adv.draws[0].unit}
    rows = sens.table(inputs, y)
    group, share, params = sens.measure_next(rows)
    if p == "fresh" or k == 0:
        ctx = max(adv.dep.contexts)
    else:
        ctx = max(adv.dep.contexts, key=lambda c: float(np.ptp(adv.share_vs_fresh(k, c))))
    far = sorted({n for c, notes in adv.notes.items() if c[0] == k for n in notes})
    return {"k": k, "policy": p, "gain_pct": adv.gain_interval(k, p, prob).to_json(),
            "over_fresh_k": best, "measurement": group, "params": params[:3],
            "variance_share": share, "ranked_by": ("rank correlation" if all(
                r.share == 0 for r in rows) else "variance share"), "extrapolated": far, "context": ctx,
            "point_sets": cell_sets(adv.dep, k, ctx), "group": group}


def write_point(dep: Any, doubt: dict, folder: Path) -> Path:
    """The deployment cell the measurement is for, as an experiment file (the PR's experiment
    with the cell's settings; its measured rows, of another setup, left out), so the printed
    command is short and the settings are in one place a user can read and edit."""
    from mtpsim.fileio import atomic_write_text, output_dir
    from mtpsim.spec import load_experiment
    from mtpsim.spec.paths import path_keys, rebased
    from mtpsim.spec.write import experiment_toml

    exp = load_experiment(str(PR_EXPERIMENT), doubt["point_sets"])
    d = {k: v for k, v in exp.to_dict().items() if k not in ("source", "overrides")}
    d["description"] = (f"advise point: k={doubt['k']}, context {doubt['context']:,}, "
                        f"{dep.model} {dep.quantization} on {dep.tp} x {dep.gpu}")
    cal = d.get("calibration", {})
    for key in ("measured", "measured_source", "fit_metrics", "fit_policy", "fit"):
        cal.pop(key, None)
    # a path the PR's experiment holds (uncertainty.summary) is from experiments/; the point file
    # lives in `folder`: the same file, from there
    for key in path_keys():
        section, name = key.split(".")
        if isinstance(value := d.get(section, {}).get(name), str):
            d[section][name] = rebased(PR_EXPERIMENT, key, value, folder)
    output_dir(folder, "--point-dir")
    path = folder / f"{Path(dep.source).stem}-k{doubt['k']}-ctx{doubt['context']}.toml"
    atomic_write_text(path, experiment_toml(d, f"mtpsim advise {dep.source}: the cell whose "
                                            f"measurement would decide k={doubt['k']}, "
                                            f"{doubt['policy']}\n(experiments/pr47352.toml with "
                                            + ", ".join(doubt["point_sets"]) + ")"))
    return path


PR_EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "pr47352.toml"


def cell_sets(dep: Any, k: int, ctx: int) -> list[str]:
    """The PR's experiment's overrides for one cell of the deployment."""
    from mtpsim.uncertainty.advise import PR_RATES, _rates

    conc = max(dep.concurrency)
    return [f"speculative.num_speculative_tokens={k}", f"workload.input_len={ctx}",
            f"workload.max_input_len={ctx}", f"workload.output_len={dep.output_len}",
            f"workload.max_concurrency={conc}", f"workload.num_prompts={max(8, 2 * conc)}",
            f"workload.temperature={dep.temperature:g}", f"engine.tp={dep.tp}",
            f"engine.max_num_seqs={dep.max_num_seqs}", f'model.quantization="{dep.quantization}"',
            *([f"engine.max_model_len={dep.max_model_len}"] if dep.max_model_len else []),
            f'hardware.preset="{dep.gpu}"', f'model.preset="{dep.model}"',
            # beyond the PR's measured positions, the rates the cell ran (the last one repeated)
            *([f"acceptance.per_position=[{', '.join(f'{x:.6g}' for x in _rates(k))}]"]
              if k > len(PR_RATES) else [])]
