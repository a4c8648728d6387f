"""`mtpsim calibrate`: fit the cost model's efficiency factors to a measured row."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from mtpsim.console import StdConsole
from mtpsim.errors import SpecError, UserError
from mtpsim.fileio import atomic_write_text, dumps

console = StdConsole()
err_console = StdConsole(stderr=True)


def write_factors(path: Path, factors: dict[str, float]) -> None:
    """Set `factors` in the [calibration] table of the TOML at `path`, keeping everything else."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r"(?m)^\[calibration\][ \t]*(#.*)?$", text)
    if m is None:
        raise SpecError(path, "calibration", "expected a [calibration] table to write into")
    nxt = re.search(r"(?m)^\[", text[m.end():])
    end = m.end() + (nxt.start() if nxt else len(text) - m.end())
    body = text[m.end():end]
    for name, value in factors.items():
        line = f"{name} = {value:.6g}"
        pat = re.compile(rf"(?m)^{re.escape(name)}[ \t]*=[^\n#]*")
        body = pat.sub(line, body, count=1) if pat.search(body) else "\n" + line + body
    atomic_write_text(path, text[:m.end()] + body + text[end:])


def calibrate(
    experiment: Annotated[Path, typer.Argument(
        help="Experiment TOML with \\[calibration.measured], e.g. experiments/pr47352.toml.")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a spec field: section.key=value (repeatable), e.g. "
        "--set calibration.fit_policy=share. "
        "A relative path (calibration.file) is from the current folder.")] = None,
    write: Annotated[bool, typer.Option(
        "--write", help="Store the fitted factors in the experiment's \\[calibration] table, "
        "keeping its other lines and comments, so that later runs use them, e.g. "
        "mtpsim calibrate exp.toml --write.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the fit as JSON (before, after, measured, simulated, condition) "
        "instead of tables, e.g. --json > fit.json.")] = False,
) -> None:
    """Fit the cost model's efficiency factors to a measured benchmark row.

    The factors named in [b]\\[calibration] fit[/b] are fitted so that the simulated
    [b]fit_metrics[/b] of [b]fit_policy[/b] match [b]\\[calibration.measured.<policy>][/b]
    (scipy least squares on relative errors), and the fit is reported.

    Example: [cyan]mtpsim calibrate experiments/pr47352.toml --write[/cyan]
    """
    from mtpsim.calibration.factors import calibrate as fit_factors
    from mtpsim.calibration.factors import identifiable
    from mtpsim.report.tables import fit_table
    from mtpsim.spec import load_experiment
    from mtpsim.spec.paths import command_line_sets
    from mtpsim.spec.roles import setup_overrides

    changed = setup_overrides(set_ or [])
    if write and changed:
        raise UserError("--write", None, "expected no --set that changes the measured setup "
                        f"({', '.join(changed)}): factors fitted to another setup do not belong "
                        "in the experiment file")
    exp = load_experiment(experiment, command_line_sets(experiment, set_ or []))
    if exp.calibration.file:  # its fitted step cost replaces the roofline the factors scale
        raise SpecError(exp.source, "calibration.file", f"expected none for calibrate, got "
                        f"{exp.calibration.file!r}: that file's fitted step cost replaces the "
                        "roofline whose factors calibrate fits (refit the file from traces: "
                        "mtpsim simulate EXP --trace T1 --trace T2 --save-calibration FILE)")
    if write:
        from mtpsim.fileio import output_file

        output_file(experiment, "--write")  # before the fit: its result must be storable
    fit = fit_factors(exp)
    # A fit that stopped short (e.g. at its evaluation limit) is reported but never stored.
    wrote = write and fit.success
    if wrote:
        write_factors(experiment, fit.after)
    if as_json:
        typer.echo(dumps({"before": fit.before, "after": fit.after, "measured": fit.measured,
                          "setup_changed_by_set": changed,
                               "simulated": fit.simulated, "evaluations": fit.evaluations,
                               "success": fit.success, "message": fit.message,
                               "condition": fit.condition, "identifiable": identifiable(fit)},
                              indent=2))
        _refuse_unconverged(write, wrote, fit.message)
        return
    from mtpsim.report.fit import print_table

    print_table(console, fit_table(fit.before, fit.after, fit.measured, fit.simulated))
    console.print(f"{fit.evaluations} simulations; {fit.message.rstrip('.')}; Jacobian condition "
                  f"{fit.condition:.3g}", highlight=False)
    if not identifiable(fit):
        console.print("[yellow]warning:[/yellow] these metrics barely tell the fitted factors "
                      "apart; fix some of them (a prior) or fit to more metrics", highlight=False)
    if changed:  # the rows were measured at the file's setup, not at the --set one
        console.print(f"[yellow]warning:[/yellow] fitted at {', '.join(changed)} to rows measured "
                      "at the experiment file's setup: a what-if, not a calibration of this "
                      "setup", highlight=False)
    console.print("[calibration]\n" + "\n".join(f"{k} = {v:.6g}" for k, v in fit.after.items()),
                  highlight=False, markup=False)
    if wrote:
        console.print(f"wrote the fitted factors to {experiment}", highlight=False)
    _refuse_unconverged(write, wrote, fit.message)


def _refuse_unconverged(write: bool, wrote: bool, message: str) -> None:
    if write and not wrote:
        err_console.print(f"not written: the fit did not converge ({message.rstrip('.')}); "
                          "the experiment file is unchanged", highlight=False, markup=False)
        raise typer.Exit(1)
