"""A file path in the experiment file (`calibration.file`, `uncertainty.summary`) is read from
the experiment file's folder; the same path typed on the command line (`--set
calibration.file=runs/cal.json`) was read from there too, which a user typing a path relative to
their shell's folder did not expect (`experiments/runs/cal.json: file not found`). Now a relative
path on the command line is read from the current folder, as most tools do; one in the file still
from the file's folder."""

import shutil
from pathlib import Path

from typer.testing import CliRunner

from mtpsim.cli import app

ROOT = Path(__file__).resolve().parents[1]
CAL = ROOT / "experiments" / "heldout" / "calibration.json"
EXP = ROOT / "experiments" / "reference-cpu.toml"
SMALL = ["--set", "workload.num_prompts=8", "--set", 'policies=["fresh","share"]']  # as fitted


def _simulate(*args: str):
    res = CliRunner().invoke(app, ["simulate", *args, *SMALL])
    return res.exit_code, " ".join(res.output.split())


def _layout(tmp_path: Path) -> Path:
    """tmp/exp/e.toml (the experiment) and tmp/cal/c.json (a calibration beside it, not in it)."""
    (tmp_path / "exp").mkdir()
    (tmp_path / "cal").mkdir()
    shutil.copy(EXP, tmp_path / "exp" / "e.toml")
    shutil.copy(CAL, tmp_path / "cal" / "c.json")
    return tmp_path / "exp" / "e.toml"


def test_a_relative_set_path_is_read_from_the_current_folder(tmp_path, monkeypatch):
    exp = _layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, said = _simulate(str(exp), "--set", "calibration.file=cal/c.json")
    assert code == 0, said
    monkeypatch.chdir(tmp_path / "cal")
    code, said = _simulate(str(exp), "--set", "calibration.file=c.json")
    assert code == 0, said


def test_a_relative_set_path_is_not_read_from_the_experiments_folder(tmp_path, monkeypatch):
    exp = _layout(tmp_path)
    shutil.copy(CAL, tmp_path / "exp" / "c.json")  # beside the experiment only
    monkeypatch.chdir(tmp_path)
    code, said = _simulate(str(exp), "--set", "calibration.file=c.json")
    assert code == 2 and said.startswith("error: --set: calibration.file: "), said
    assert "'c.json'" in said and "current folder" in said and "Traceback" not in said, said


def test_a_relative_path_in_the_experiment_file_is_read_from_its_folder(tmp_path, monkeypatch):
    exp = _layout(tmp_path)
    exp.write_text(exp.read_text() + '\n[calibration]\nfile = "../cal/c.json"\n')
    monkeypatch.chdir(tmp_path / "cal")  # where c.json also is as "c.json": not what is read
    code, said = _simulate(str(exp))
    assert code == 0, said
    exp.write_text(exp.read_text().replace('file = "../cal/c.json"', 'file = "c.json"'))
    code, said = _simulate(str(exp))
    assert code == 2 and said.startswith(f"error: {exp}: calibration.file: "), said
    assert "experiment file's folder" in said, said


def test_a_sweep_axis_of_set_paths_is_read_from_the_current_folder(tmp_path, monkeypatch):
    exp = _layout(tmp_path)
    shutil.copy(CAL, tmp_path / "cal" / "d.json")
    monkeypatch.chdir(tmp_path / "cal")
    res = CliRunner().invoke(app, ["sweep", str(exp), "-j", "1", *SMALL,
                                   "--set", "calibration.file=c.json,d.json"])
    assert res.exit_code == 0, res.output
