"""`mtpsim compare DIR` of a simulated `mtpsim sweep --out DIR` (or of its points folder) says
that it got a simulated sweep's summary or point and where that sweep's table is, in one line,
exit 2: not "duration: expected an mtpsim result", which blamed a field."""

from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.cli import app


def test_compare_names_a_simulated_sweeps_files(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    ran = CliRunner().invoke(app, ["sweep", str(exp), "--set", "speculative.num_speculative_tokens=2,3",
                                   "--out", str(out), "-j", "1"])
    assert ran.exit_code == 0, ran.output
    for target, what in ((out, "a simulated sweep's summary"), (out / "points", "a simulated sweep's point")):
        res = CliRunner().invoke(app, ["compare", str(target)])
        line = " ".join(res.output.split())
        assert res.exit_code == 2 and "Traceback" not in res.output
        assert f"got {what}: the sweep's table already holds every policy" in line, line
        assert "duration" not in line
