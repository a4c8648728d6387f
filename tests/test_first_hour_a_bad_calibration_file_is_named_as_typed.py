"""A `[calibration] file` that is not a calibration is named as the user can type it from here:
`simulate /repo/experiments/e.toml --set calibration.file=c.json` typed in another folder read
`error: /repo/experiments/../../tmp/x/c.json: format: ...` (the path joined to the experiment's
folder); now `error: c.json: format: ...`. A path in the file reads from the file's folder, shown
from the current folder."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mtpsim.cli import app

ROOT = Path(__file__).resolve().parents[1]


def test_a_set_path_is_named_as_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("c.json").write_text("{}")
    res = CliRunner().invoke(app, ["simulate", str(ROOT / "experiments" / "reference-cpu.toml"),
                                   "--set", "calibration.file=c.json"])
    line = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert line.startswith('error: c.json: format: expected "mtpsim-calibration"'), line


def test_a_file_path_is_named_from_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp").mkdir()
    (tmp_path / "cal").mkdir()
    (tmp_path / "cal" / "c.json").write_text("[1]")
    (tmp_path / "exp" / "e.toml").write_text('[calibration]\nfile = "../cal/c.json"\n')
    res = CliRunner().invoke(app, ["simulate", "exp/e.toml"])
    line = " ".join(res.output.split())
    assert res.exit_code == 2 and line.startswith("error: cal/c.json: format:"), line
