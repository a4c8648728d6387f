"""`mtpsim advise`: which k and policy to deploy, with intervals, from a deployment file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mtpsim.console import StdConsole
from mtpsim.fileio import dumps
from mtpsim.report.numbers import delta_interval, signed_interval

console = StdConsole()
err_console = StdConsole(stderr=True)


def advise(
    deployment: Annotated[Path, typer.Argument(
        help="Deployment TOML: [deployment] model, gpu, tp; [workload] context_lengths, "
        "context_weights, concurrency, output_len, temperature; [advise] k, policies, draws. "
        "E.g. experiments/advise-deepseek-v3.2-b200.toml.")],
    jobs: Annotated[int | None, typer.Option(
        "--jobs", "-j", min=1, help="Worker processes (default: the usable cores).")] = None,
    draws: Annotated[int | None, typer.Option(
        help="Parameter draws (default: the file's [advise] draws, else 12), e.g. --draws 32.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    point_dir: Annotated[Path, typer.Option(
        help="Where a 'cannot tell' verdict writes the experiment file of the measurement that "
        "would decide it (the printed command runs it), e.g. --point-dir runs/advise.")]
    = Path("runs/advise"),
    plot: Annotated[Path | None, typer.Option(
        help="Write DIR/advise-gain.png: share vs fresh throughput gain against context, "
        "median and interval band per k. E.g. --plot runs/advise.")] = None,
) -> None:
    """Recommend (k, policy) for a deployment: expected output throughput and median TPOT per
    k and policy with intervals, the gain over the best [cyan]fresh[/cyan] setting with
    P(gain > 0), and "cannot tell" plus the measurement that would decide where no choice is
    robust.

    Every (k, context, concurrency) cell runs each policy on the same draws of the spec's
    \\[uncertainty] priors. Example: [cyan]mtpsim advise experiments/advise-deepseek-v3.2-b200.toml[/cyan]
    """
    import dataclasses

    from mtpsim.fileio import output_dir
    from mtpsim.runs.executor import default_workers
    from mtpsim.uncertainty.advise import advise as run_advise
    from mtpsim.uncertainty.advise import load_deployment

    if plot is not None:
        from mtpsim.extras import require

        require("--plot", "plots")
    dep = load_deployment(deployment)
    if draws is not None:
        from mtpsim.uncertainty.limits import check_draws

        check_draws(draws, "--draws")
        dep = dataclasses.replace(dep, draws=draws)
    if plot is not None:
        output_dir(plot, "--plot")
    jobs = jobs or default_workers()
    if not as_json and err_console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(TextColumn("advise"), BarColumn(), MofNCompleteColumn(), console=err_console.current(),
                      transient=True) as bar:
            task = bar.add_task("cells", total=None)
            adv = run_advise(dep, jobs, progress=lambda d, t: bar.update(task, completed=d, total=t))
    else:
        adv = run_advise(dep, jobs)
    from mtpsim.report.advise import advise_table
    from mtpsim.report.fit import print_lines, print_table

    prob = 0.9
    rows = adv.rows(prob)
    k, p, iv, robust = adv.recommendation(prob)
    doubt = _doubt(adv, prob)
    if doubt is not None:
        from mtpsim.uncertainty import sensitivity as sens

        doubt["point"] = str(write_point(dep, doubt, point_dir))
        doubt["command"] = sens.command_for(doubt.pop("group"), doubt["point"], False)
    verdict = _verdict(adv, prob, doubt) + [_mc_line(adv, rows)] + _legend(adv, prob)
    if as_json:
        typer.echo(dumps({
            "deployment": str(deployment), "draws": dep.draws, "wall_s": adv.wall_s,
            "best_fresh_k": adv.best_fresh(),
            "recommendation": {"k": k, "policy": p, "gain_pct": iv.to_json(), "robust": robust},
            "cannot_tell": doubt, "verdict": verdict, "skipped": adv.skipped,
            "rows": [{kk: (v.to_json() if hasattr(v, "to_json") else v) for kk, v in r.items()}
                     for r in rows],
            "extrapolation": {f"k={c[0]} ctx={c[1]} conc={c[2]}": list(n)
                              for c, n in adv.notes.items() if n}}, indent=2))
        return
    # cut to fit: k and policy repeat; a gain keeps its P, share vs fresh its P and verdict
    print_table(console, advise_table(adv, rows, prob), keep=2, group=(1, 1, 2, 1, 3))
    print_lines(console, verdict)
    if plot is not None:
        from mtpsim.report.plots import gain_plot

        console.print(f"plot: {gain_plot(adv, prob, plot / 'advise-gain.png')}", highlight=False)


def _mc_line(adv, rows) -> str:
    """The Monte Carlo SE of the share-vs-fresh interval ends, against the 0.1-point target."""
    import math

    from mtpsim.uncertainty.summary import MC_SE_TARGET

    ses = {r["k"]: r["vs_fresh_same_k"].mc_se for r in rows
           if r.get("vs_fresh_same_k") is not None and r["k"] > 1}
    if not ses:
        return f"Monte Carlo: {adv.dep.draws} draws"
    k, worst = max(ses.items(), key=lambda kv: kv[1])
    each = ", ".join(f"k={kk} {se:.2f}" for kk, se in sorted(ses.items()))
    head = (f"Monte Carlo: {adv.dep.draws} draws; MC SE of the share vs fresh interval ends {each} "
            "points")
    if worst <= MC_SE_TARGET:
        return head + f" (target {MC_SE_TARGET}: met)"
    need = int(math.ceil(adv.dep.draws * (worst / MC_SE_TARGET) ** 2))
    return head + (f": above the {MC_SE_TARGET} target, so those ends move with the seed (about "
                   f"{need:,} draws would meet it at k={k}); the verdicts rest on the region of "
                   "practical equivalence, not on the ends' last digit")


def _doubt(adv, prob) -> dict | None:
    """When the best median (k, policy) is not robust: its gain, why its interval spans 0 (the
    parameters that drive it, the extrapolation that widens it) and the exact command of the
    measurement that would decide it, at the context where the answer is widest."""
    import numpy as np

    from mtpsim.uncertainty import sensitivity as sens
    from mtpsim.uncertainty.summary import interval

    k, p, iv, robust = adv.recommendation(prob)
    if robust:
        return None
    best = adv.best_fresh()
    y = adv.gain(k, p)
    inputs = {n: np.array([d.unit[n] for d in adv.draws]) for n in adv.draws[0].unit}
    rows = sens.table(inputs, y)
    group, share, params = sens.measure_next(rows)
    if p == "fresh" or k == 0:
        ctx = max(adv.dep.contexts)
    else:
        ctx = max(adv.dep.contexts, key=lambda c: float(np.ptp(adv.share_vs_fresh(k, c))))
    far = sorted({n for c, notes in adv.notes.items() if c[0] == k for n in notes})
    return {"k": k, "policy": p, "gain_pct": interval(y, None, prob, delta=True).to_json(),
            "over_fresh_k": best, "measurement": group, "params": params[:3],
            "variance_share": share, "ranked_by": ("rank correlation" if all(
                r.share == 0 for r in rows) else "variance share"), "extrapolated": far, "context": ctx,
            "point_sets": _cell_sets(adv.dep, k, ctx), "group": group}


def _verdict(adv, prob, doubt: dict | None) -> list[str]:
    from mtpsim.report.fit import COMMAND
    from mtpsim.uncertainty.summary import interval

    k, p, iv, robust = adv.recommendation(prob)
    best = adv.best_fresh()
    pct = round(100 * prob)
    out = []
    others = [(kk, interval(adv.gain(kk, "fresh"), None, prob, delta=True)) for kk in adv.ks()
              if kk != best]
    if others:  # ranked by median throughput, as best_fresh and the table's tok/s column
        import numpy as np

        kk, g = max(others, key=lambda o: float(np.median(adv.mix(o[0], "fresh",
                                                                  "output_throughput"))))
        sure = "robustly ahead of" if g.hi < 0 else "but cannot tell it from"
        out.append(f"k: fresh k={best} has the best median throughput, {sure} the next best, "
                   f"k={kk} at {delta_interval(g)} (P(k={kk} better) = {g.p_pos:.2f})")
    gains = {(kk, pp): interval(adv.gain(kk, pp), None, prob, delta=True)
             for kk, pp in adv.pairs()}
    if 0 in adv.ks() and best > 0:
        g = interval(adv.gain_vs_no_mtp(best, "fresh"), None, prob, delta=True)
        out.append(f"MTP on: fresh k={best} against plain decoding (k=0, no MTP) {delta_interval(g)} in "
                   f"output throughput, P(gain > 0) = {g.p_pos:.2f}")
    if robust and (k, p) != (best, "fresh"):
        out.append(f"recommended: k={k}, {p}: expected gain over the best fresh setting (k={best}) "
                   f"{delta_interval(iv)} in output throughput, P(gain > 0) = {iv.p_pos:.2f}; "
                   f"{_level(adv, k, p, prob)}")
    else:
        out.append(f"recommended: k={best}, fresh: {_level(adv, best, 'fresh', prob)} (the best "
                   "fresh setting, the baseline of the gains)")
        alt = max((c for c in gains if c != (best, "fresh")), key=lambda c: gains[c].median,
                  default=None)
        if alt is not None and doubt is None:
            g = gains[alt]
            out.append(f"next best: k={alt[0]}, {alt[1]} at {delta_interval(g)}, P(gain > 0) = "
                       f"{g.p_pos:.2f}")
    if doubt is not None:
        g = doubt["gain_pct"]
        why = f"{doubt['measurement']} parameters ({', '.join(doubt['params'])}) "
        why += (f"carry {doubt['variance_share']:.2f} of its variance"
                if doubt["ranked_by"] == "variance share" else
                f"move it most (by rank correlation: {len(adv.draws)} draws are too few for "
                "variance shares)")
        if doubt["extrapolated"]:
            why += (f", and k={k}'s cells lie outside the PR's measured setup, which widens it "
                    f"({'; '.join(doubt['extrapolated'][:2])})")
        gain = signed_interval(g["median"], g["lo"], g["hi"], 2, " %")
        out.append(f"cannot tell: k={k}, {p} has the best median, {gain} over fresh k={best} (P(gain > 0) = "
                   f"{g['p_pos']:.2f}), but its {pct} % interval spans 0, so fresh k={best} stays "
                   f"the recommendation. Why: {why}. The measurement that would decide it (k={k} "
                   f"at context {doubt['context']:,}, where the answer is widest):")
        out.append(COMMAND + doubt["command"].removeprefix("mtpsim "))
        out.append(f"(the cell's settings are in {doubt['point']}: the PR's experiment with "
                   f"k={k}, context {doubt['context']:,} and the deployment's GPU, TP, "
                   "quantization and concurrency)")
    worse = [(kk, pp, g) for (kk, pp), g in gains.items() if g.hi < 0]
    if worse:
        out.append(f"robustly worse than fresh k={best}: " + "; ".join(
            f"k={kk} {pp} {delta_interval(g)}" for kk, pp, g in worse))
    if adv.skipped:
        out.append(f"skipped (do not fit in GPU memory): {'; '.join(adv.skipped)}")
    far = sorted({n for notes in adv.notes.values() for n in notes})
    if far:
        out.append("EXTRAPOLATED beyond the PR's measured setup (k = 3, ~10K context, B200 TP4 "
                   "NVFP4): " + "; ".join(far[:6]) + ("; ..." if len(far) > 6 else ""))
    out.append(f"{len(adv.cells)} cells ({len(adv.pairs())} k x policy settings) x "
               f"{adv.dep.draws} draws in {adv.wall_s:.1f} s wall")
    return out


def _legend(adv, prob: float) -> list[str]:
    """What each number printed above means."""
    from mtpsim.uncertainty.summary import region

    pct = round(100 * prob)
    return [f"how to read: the figures in brackets are the {pct} % interval over the "
            f"{adv.dep.draws} parameter draws, the figure before them their median; gain = % "
            "output throughput over the best fresh k (gain vs no MTP: over plain decoding, k=0); "
            "P(gain>0) = share of draws where it is positive; P(>+R) = share of draws where share "
            "beats fresh by more than the region of practical equivalence R = "
            f"{region('output_throughput'):g} %; an EXTRAPOLATED note's (n) is how far a cell "
            "lies outside the PR's measured setup, in octaves (doublings or halvings) of k, "
            "context, top-k and batch, plus half-units of temperature"]


def _level(adv, k: int, policy: str, prob: float) -> str:
    from mtpsim.uncertainty.summary import interval

    thr = interval(adv.mix(k, policy, "output_throughput"), None, prob)
    tpot = interval(adv.mix(k, policy, "median_tpot_ms"), None, prob)
    return (f"{thr.median:,.0f} [{thr.lo:,.0f}, {thr.hi:,.0f}] output tok/s, median TPOT "
            f"{tpot.median:.2f} [{tpot.lo:.2f}, {tpot.hi:.2f}] ms")


def write_point(dep, doubt: dict, folder: Path) -> Path:
    """The deployment cell the measurement is for, as an experiment file (the PR's experiment
    with the cell's settings; its measured rows, of another setup, left out), so the printed
    command is short and the settings are in one place a user can read and edit."""
    from mtpsim.fileio import atomic_write_text, output_dir
    from mtpsim.spec import load_experiment
    from mtpsim.spec.write import experiment_toml

    exp = load_experiment(str(PR_EXPERIMENT), doubt["point_sets"])
    d = {k: v for k, v in exp.to_dict().items() if k not in ("source", "overrides")}
    d["description"] = (f"advise point: k={doubt['k']}, context {doubt['context']:,}, "
                        f"{dep.model} {dep.quantization} on {dep.tp} x {dep.gpu}")
    cal = d.get("calibration", {})
    for key in ("measured", "measured_source", "fit_metrics", "fit_policy", "fit"):
        cal.pop(key, None)
    output_dir(folder, "advise point file")
    path = folder / f"{Path(dep.source).stem}-k{doubt['k']}-ctx{doubt['context']}.toml"
    atomic_write_text(path, experiment_toml(d, f"mtpsim advise {dep.source}: the cell whose "
                                            f"measurement would decide k={doubt['k']}, "
                                            f"{doubt['policy']}\n(experiments/pr47352.toml with "
                                            + ", ".join(doubt["point_sets"]) + ")"))
    return path


PR_EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments" / "pr47352.toml"


def _cell_sets(dep, k: int, ctx: int) -> list[str]:
    """The PR's experiment's overrides for one cell of the deployment."""
    conc = max(dep.concurrency)
    return [f"speculative.num_speculative_tokens={k}", f"workload.input_len={ctx}",
            f"workload.max_input_len={ctx}", f"workload.output_len={dep.output_len}",
            f"workload.max_concurrency={conc}", f"workload.num_prompts={max(8, 2 * conc)}",
            f"workload.temperature={dep.temperature:g}", f"engine.tp={dep.tp}",
            f"engine.max_num_seqs={dep.max_num_seqs}", f'model.quantization="{dep.quantization}"',
            f'hardware.preset="{dep.gpu}"', f'model.preset="{dep.model}"']


