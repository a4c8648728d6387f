"""`mtpsim sweep --out DIR` resumed the points already in DIR/points without a word on what it
kept, and named each point's file by a hash of its spec alone. So after an mtpsim update that
changed the model but no spec field (a cost formula, a fit), every old point was reused as if the
new code had made it, and the table mixed two versions of the model silently; after an update
that changed a spec default (or an edit of the experiment file), every point got a new id and was
rerun, the old files left unread, silently too. Now each point file records the mtpsim that made
it (version, a hash of its code, the git commit where there is one); a point made by other code is
rerun, and a resumed sweep says, one line per kind with counts, what it reuses and what it reruns
and why, on stderr (stdout keeps the table or the JSON)."""

import json

from _sweep_experiment import SMALL, write_small
from typer.testing import CliRunner

from mtpsim.cli import app

GRID = ["--set", "workload.max_concurrency=2,4,8"]


def _sweep(exp, out):
    res = CliRunner().invoke(app, ["sweep", str(exp), *GRID, "--out", str(out), "--json", "-j", "1"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), [" ".join(line.split()) for line in res.stderr.splitlines()]


def _files(out):
    return sorted((out / "points").glob("*.json"))


def test_each_point_records_the_mtpsim_that_made_it(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    first, said = _sweep(exp, out)
    assert first["resumed"] == 0 and not any(line.startswith("resume:") for line in said), said
    for f in _files(out):
        made = json.loads(f.read_text())["mtpsim"]
        assert made["version"] and len(made["code"]) >= 12, made


def test_points_of_other_code_are_rerun_and_said_so(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    first, _ = _sweep(exp, out)
    stale, old = _files(out)[:2]
    for f, code in ((stale, "0" * 16), (old, None)):  # another mtpsim's; one from before the record
        rec = json.loads(f.read_text())
        if code is None:
            del rec["mtpsim"]
        else:
            rec["mtpsim"]["code"] = code
        rec["results"]["fresh"]["metrics"]["output_throughput"] = 1.0  # not this code's figure
        f.write_text(json.dumps(rec))
    again, said = _sweep(exp, out)
    assert again["resumed"] == 1 and again["rows"] == first["rows"], said  # nothing mixed in
    assert f"resume: 1 point reused from {out / 'points'} (same spec, same mtpsim code)" in said, said
    other = [line for line in said if line.startswith("resume: 1 point rerun: made by other mtpsim code")]
    assert len(other) == 1 and "0000000000000000" in other[0], said
    assert any(line.startswith("resume: 1 point rerun: made before point files recorded the mtpsim "
                               "that made them") for line in said), said
    for f in (stale, old):
        assert json.loads(f.read_text())["mtpsim"]["code"] != "0" * 16


def test_points_whose_spec_changed_since_are_rerun_and_said_so(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    _sweep(exp, out)
    exp.write_text(SMALL.replace("output_len = 60", "output_len = 70"))  # as a changed default does
    again, said = _sweep(exp, out)
    assert again["resumed"] == 0 and len(_files(out)) == 6
    assert any(line.startswith("resume: 3 points rerun: their spec changed since their files were "
                               "made") for line in said), said
    assert not any("reused" in line for line in said), said


def test_uncertainty_draws_of_other_code_are_rerun_and_said_so(tmp_path):
    """`sweep --uncertainty N --out DIR` keeps each point's draws in DIR/uncertainty: the same
    rule (they were reused whatever code made them)."""
    exp, out = write_small(tmp_path), tmp_path / "out"
    args = ["sweep", str(exp), "--set", "workload.max_concurrency=2,4", "--uncertainty", "2",
            "-j", "1", "--out", str(out), "--json"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    stale = sorted((out / "uncertainty").glob("*.json"))[0]
    rec = json.loads(stale.read_text())
    assert rec["mtpsim"]["code"]
    rec["mtpsim"]["code"] = "0" * 16
    rec["rows"][0]["output_throughput"]["median"] = 1.0  # not this code's figure
    stale.write_text(json.dumps(rec))
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["points"] == json.loads(first.stdout)["points"]
    said = [" ".join(line.split()) for line in again.stderr.splitlines()]
    assert f"resume: 1 point reused from {out / 'uncertainty'} (same spec, 2 draws, same mtpsim " \
           "code)" in said, said
    assert "resume: 1 point rerun: made by other mtpsim code, or before point files recorded it" \
        in said, said
