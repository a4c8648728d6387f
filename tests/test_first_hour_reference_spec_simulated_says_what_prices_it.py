"""`simulate` of a reference-engine spec with no calibration prices the reference model by the
roofline on a GPU preset: it says so (a run-real of the same spec times a CPU; sim vs real of the
two read 4,010 against 240 tok/s with no word), and says nothing once a calibration prices it."""

import json

from typer.testing import CliRunner

from mtpsim.cli import app


def test_the_roofline_on_a_gpu_preset_is_named_in_the_warnings():
    res = CliRunner().invoke(app, ["simulate", "experiments/reference-cpu.toml", "--json"])
    assert res.exit_code == 0, res.output
    warnings = json.loads(res.stdout)["warnings"]
    assert any("priced by the roofline on B200" in w and "--trace" in w for w in warnings), warnings


def test_a_gpu_spec_has_no_such_warning():
    res = CliRunner().invoke(app, ["simulate", "experiments/pr47352.toml", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout).get("warnings", []) == []
