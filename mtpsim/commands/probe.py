"""`mtpsim probe`: time the fixed machine-speed probe on this machine (mtpsim.probe)."""

from __future__ import annotations

from typing import Annotated

import typer

from mtpsim.fileio import dumps


def probe(
    repeats: Annotated[int, typer.Option(
        min=1, max=50, help="Timed repeats (the figure is their median).")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the probe record as JSON only.")] = False,
) -> None:
    """Time the fixed, one-thread machine-speed probe (a matmul chain and two sparse forwards of
    the shipped reference model, a few seconds) and print its wall and CPU seconds. Real runs
    record it around every round; pass the wall figure as [cyan]--set calibration.probe_s=...[/cyan]
    so a calibration made on another machine or at another hour is rescaled to this one.
    """
    from mtpsim.probe import run_probe

    rec = run_probe(repeats)
    if as_json:
        typer.echo(dumps(rec))
        return
    typer.echo(f"probe v{rec['version']}: wall {rec['wall_s']:.4f} s, CPU {rec['cpu_s']:.4f} s "
               f"(median of {rec['repeats']}, one thread; wall/CPU {rec['wall_s'] / rec['cpu_s']:.2f}: "
               "above 1 means other load shares this core)")
