"""`mtpsim doctor`: check the machine before a real run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from mtpsim.console import StdConsole
from mtpsim.errors import UserError
from mtpsim.fileio import dumps

console = StdConsole()
STYLE = {"OK": "green", "WARN": "yellow", "FAIL": "bold red", "SKIP": "dim"}


def doctor(
    experiment: Annotated[Path | None, typer.Argument(
        help="Experiment TOML to check for (GPU memory, model, dataset, port); without it only "
        "the machine is checked.")] = None,
    engine: Annotated[str, typer.Option(help="Engine to check for: vllm, reference or sglang.")] = "vllm",
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a spec field first, as run-real would: section.key=value. "
        "A relative path (calibration.file) is from the current folder.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
    smoke: Annotated[bool, typer.Option(
        "--smoke", help="Check one GPU node for `run-real --smoke` instead (driver's CUDA, nvcc "
        "for DeepGEMM, host compiler, DeepGEMM, compute capability, disk); no experiment."
    )] = False,
) -> None:
    """Check that this machine can run [cyan]mtpsim run-real[/cyan]: Python, torch and CUDA,
    the GPUs and their memory against the experiment's need (the simulator's memory check), the
    vLLM version and its MTP speculator shape, the plugin entry point vLLM sees,
    VLLM_USE_V2_MODEL_RUNNER, Triton, the model (local or in the Hugging Face cache) and its
    index_share_for_mtp_iteration, the dataset, the port, and Ray where a cluster is named.

    Each line is OK, WARN, FAIL (with the fix) or SKIP (not applicable). Exit code 0 without a
    FAIL, 1 with one. Nothing is downloaded or started.
    Example: [cyan]mtpsim doctor experiments/pr47352.toml --set workload.dataset_path=$SPEED[/cyan]
    """
    from mtpsim.doctor import Context, Probe, run_checks

    if smoke and (experiment is not None or set_):
        raise UserError(None, "--smoke", "takes no experiment or --set (it checks one GPU node "
                        "for run-real --smoke)")
    from mtpsim.real import backend

    backend(engine)  # an unknown engine: one line
    exp = None
    if experiment is not None:
        from mtpsim.spec import load_experiment
        from mtpsim.spec.paths import command_line_sets

        exp = load_experiment(str(experiment), command_line_sets(experiment, set_ or []))
    elif set_:
        raise UserError(None, "--set", "expected an experiment to apply it to")
    if smoke:
        from mtpsim.doctor.smoke import run_smoke_checks

        checks = run_smoke_checks()
    else:
        checks = run_checks(Context(Probe(), engine, exp))
    failed = any(c.status == "FAIL" for c in checks)
    if as_json:
        typer.echo(dumps({"engine": engine, "experiment": str(experiment or ""),
                               "mode": "smoke" if smoke else "experiment",
                               "ok": not failed, "checks": [c.to_json() for c in checks]},
                              indent=2))
    else:
        for c in checks:
            console.print(f"[{STYLE[c.status]}]{c.status:<4}[/] {c.name:<13} "
                          f"{escape(c.detail)}", highlight=False, soft_wrap=True)
            if c.fix and c.status in ("FAIL", "WARN"):
                console.print(f"{'':<5}{'':<13} fix: {escape(c.fix)}", highlight=False,
                              soft_wrap=True)
        n = sum(c.status == "FAIL" for c in checks)
        console.print(f"{n} FAIL: fix those before run-real" if failed
                      else "ready: no FAIL", highlight=False)
    if failed:
        raise typer.Exit(1)
