"""The point file `mtpsim advise` writes on a "cannot tell" is experiments/pr47352.toml with one
cell's settings. It copied `uncertainty.summary = "../docs/data/..."` as written, relative to
experiments/, so from the point folder (default runs/advise) it named nothing and `simulate` of
the point file said the summary was unreadable. The path is written from the point file's
folder (absolute where the two share no folder below the root), and names the PR's summary."""

import os
from pathlib import Path

import pytest
from _advise_files import deployment, known_advice  # noqa: E402
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.spec import load_experiment
from mtpsim.spec.paths import from_experiment

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = ROOT / "docs" / "data" / "pr47352-uncertainty" / "summary.json"

DEP = deployment("k = [1, 2]\ndraws = 16\nmax_draws = 16")


def _known(dep_path):
    """Share at k=2 spans 0 over fresh k=2: cannot tell, a point file written."""
    return known_advice(dep_path, lambda u: 8 * (u - 0.45), every_k=True)


@pytest.mark.parametrize("where", ["checkout", "elsewhere"])
def test_the_point_file_names_the_summary_that_exists(monkeypatch, tmp_path, where):
    import mtpsim.uncertainty.advise as adv_mod

    p = tmp_path / "dep.toml"
    p.write_text(DEP)
    known = _known(p)
    monkeypatch.setattr(adv_mod, "advise", lambda dep, jobs=1, progress=None: known)
    # the default --point-dir is relative (runs/advise), read from where advise runs
    cwd = tmp_path / "checkout" if where == "checkout" else tmp_path
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    if where == "checkout":  # a folder beside docs/, as runs/advise is in a checkout
        monkeypatch.setattr("mtpsim.runs.advise.PR_EXPERIMENT", cwd / "experiments" / "pr47352.toml")
        (cwd / "experiments").mkdir()
        (cwd / "experiments" / "pr47352.toml").write_text((ROOT / "experiments" / "pr47352.toml").read_text())
        (cwd / "docs" / "data" / "pr47352-uncertainty").mkdir(parents=True)
        (cwd / "docs" / "data" / "pr47352-uncertainty" / "summary.json").write_text(SUMMARY.read_text())
    res = CliRunner().invoke(app, ["advise", str(p), "-j", "1", "--point-dir", "runs/advise", "--json"])
    assert res.exit_code == 0, res.output
    point = Path("runs/advise/dep-k2-ctx1024.toml")
    assert point.is_file()
    exp = load_experiment(point)
    written = exp.uncertainty.summary
    if where == "checkout":
        assert written == "../../docs/data/pr47352-uncertainty/summary.json"
    elif os.path.commonpath([tmp_path.resolve(), ROOT]) == os.path.sep:  # only the root shared
        assert Path(written).is_absolute()
    assert os.path.samefile(from_experiment(str(point), written),
                            cwd / "docs/data/pr47352-uncertainty/summary.json"
                            if where == "checkout" else SUMMARY)
    out = CliRunner().invoke(app, ["simulate", str(point)], env={"COLUMNS": "300"})
    assert out.exit_code == 0, out.output
    assert "unreadable" not in out.stdout
