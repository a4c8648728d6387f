"""The lines printed under advise's and simulate --uncertainty's tables are plain text, not rich
markup: the command advise prints for "the measurement that would decide it" ends in
`# with the row in [calibration.measured.fresh]`, and rich markup read that as a style tag and
printed `# with the row in `, dropping where the measured row goes."""

from __future__ import annotations

import io

import pytest

from mtpsim.console import StdConsole
from mtpsim.report.fit import COMMAND, print_lines
from mtpsim.uncertainty.sensitivity import command_for


@pytest.mark.parametrize("terminal", [False, True])
def test_bracketed_names_survive_printing(monkeypatch, terminal):
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setenv("COLUMNS", "80")
    if terminal:
        monkeypatch.setattr(out, "isatty", lambda: True, raising=False)
    cmd = command_for("sharing-off row", "runs/advise/x.toml", False)
    assert cmd.endswith("[calibration.measured.fresh]")
    prose = "set the row in [calibration.measured.fresh] and [uncertainty.priors] first"
    print_lines(StdConsole(), [COMMAND + cmd.removeprefix("mtpsim "), prose])
    text = out.getvalue()
    assert "# with the row in [calibration.measured.fresh]" in text
    assert "[uncertainty.priors]" in " ".join(text.split())
    assert "[calibration.measured.fresh] and" in " ".join(text.split())
