"""An `--out` sweep writes one file per point; a rerun skips the finished ones and recomputes
only missing or damaged points; a changed experiment file never reuses stale points."""

import json

from _sweep_experiment import SMALL, write_small
from typer.testing import CliRunner

from mtpsim.cli import app

GRID = ["--set", "speculative.num_speculative_tokens=2,3", "--set", "workload.max_concurrency=2,4"]


def sweep(exp, out):
    res = CliRunner().invoke(app, ["sweep", str(exp), *GRID, "--out", str(out), "--json", "-j", "2"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)  # stderr says what a resume reuses


def test_rerun_resumes_every_finished_point_and_redoes_a_damaged_one(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    first = sweep(exp, out)
    files = sorted((out / "points").glob("*.json"))
    assert first["resumed"] == 0 and len(files) == 4 and (out / "sweep.json").is_file()
    mtimes = {f: f.stat().st_mtime_ns for f in files}
    second = sweep(exp, out)
    assert second["resumed"] == 4 and second["rows"] == first["rows"]
    assert {f: f.stat().st_mtime_ns for f in files} == mtimes
    files[0].write_text("{ truncated")
    files[1].unlink()
    third = sweep(exp, out)
    assert third["resumed"] == 2 and third["rows"] == first["rows"]
    assert json.loads(files[0].read_text())["format"] == "mtpsim-sweep-point"


def test_an_edited_experiment_gives_new_points(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    sweep(exp, out)
    exp.write_text(SMALL.replace("output_len = 60", "output_len = 70"))
    again = sweep(exp, out)
    assert again["resumed"] == 0 and len(list((out / "points").glob("*.json"))) == 8


def test_the_summary_names_the_folder_it_resumed_from_only_when_there_is_one(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    args = ["sweep", str(exp), *GRID, "-j", "1"]
    bare = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert bare.exit_code == 0, bare.output
    assert "resumed" not in bare.output and "None" not in bare.output
    assert "4 points in " in bare.output
    for _ in range(2):
        kept = CliRunner().invoke(app, [*args, "--out", str(out)], env={"COLUMNS": "400"})
        assert kept.exit_code == 0, kept.output
    assert f"4 points (4 resumed from {out}) in " in kept.output


def test_an_inf_axis_value_stays_inf_in_the_json():
    """sweep --json and sweep.json wrote workload.request_rate=inf as null (strict JSON), which a
    script cannot tell from an unset value; the table and simulate --json say inf."""
    import json

    from typer.testing import CliRunner

    from mtpsim.cli import app

    r = CliRunner().invoke(app, ["sweep", "experiments/pr47352.toml", "-j", "1", "--json", "--set",
                                 "workload.num_prompts=8", "--set", "workload.request_rate=inf,1"])
    assert r.exit_code == 0, r.output
    rates = [row["workload.request_rate"] for row in json.loads(r.stdout)["rows"]]
    assert rates == ["inf", "inf", 1, 1]
