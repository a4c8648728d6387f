"""`simulate --out DIR` where DIR holds a simulated DIR/POLICY.json of other settings (another
seed, workload, ...) is one line, exit 2, before anything runs, naming the file and what differs,
and the result is kept; `--force` replaces it. It was replaced without a word (and a `-p` run left
DIR holding two settings' results for `compare` to pair). A result of the same settings, or of
ones that differ only in what a simulation does not read (the description), is replaced."""

from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.result import load_result


def _sim(*args):
    return CliRunner().invoke(app, ["simulate", *map(str, args)])


def test_other_settings_are_refused_and_kept_unless_force(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    assert _sim(exp, "--out", out).exit_code == 0
    before = (out / "fresh.json").read_bytes()
    for extra in ((), ("-p", "share")):
        res = _sim(exp, "--out", out, "--set", "workload.num_prompts=12", *extra)
        line = " ".join(res.output.split())
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        assert ("fresh.json: expected a simulated result of these settings to replace, got one "
                "of other settings (workload.num_prompts 10 there, 12 now)") in line, line
        assert "--force" in line
        assert (out / "fresh.json").read_bytes() == before
    res = _sim(exp, "--out", out, "--set", "workload.num_prompts=12", "--force")
    assert res.exit_code == 0, res.output
    assert load_result(out / "fresh.json").spec["workload"]["num_prompts"] == 12


def test_same_settings_or_a_new_description_are_replaced(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    for sets in ((), (), ("--set", "description=renamed")):
        res = _sim(exp, "--out", out, *sets)
        assert res.exit_code == 0, res.output
    assert load_result(out / "fresh.json").spec["description"] == "renamed"


def test_force_needs_out(tmp_path):
    res = _sim(write_small(tmp_path), "--force")
    assert res.exit_code == 2 and "--force: expected with --out" in " ".join(res.output.split())
