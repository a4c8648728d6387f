"""A deployment file's context lengths and concurrencies key the cells of the mix: a repeated one
used to reach the simulation and end in a traceback (IndexError in uncertainty/rqmc.py, a
broadcasting ValueError, an inhomogeneous array in the mix). It is one line naming the file and
field, exit 2, before anything is simulated."""

import pytest
from _advise_files import deployment  # noqa: E402
from typer.testing import CliRunner

from mtpsim.cli import app

DEP = deployment("k = [1, 2]\ndraws = 2", contexts="{ctx}", weights="{w}", concurrency="{conc}",
                 output_len=16)


@pytest.mark.parametrize(("ctx", "w", "conc", "says"), [
    ("[1024, 1024]", "[0.5, 0.5]", "[4]",
     "workload.context_lengths: expected distinct lengths (give a repeated one once, with its "
     "weights added), got 1024 2 times in [1024, 1024]"),
    ("[1024, 2048, 1024]", "[0.3, 0.4, 0.3]", "[4]",
     "workload.context_lengths: expected distinct lengths"),
    ("[1024]", "[1.0]", "[1, 4, 4]",
     "workload.concurrency: expected distinct concurrencies, got 4 2 times in [1, 4, 4]"),
])
def test_a_repeated_cell_key_is_one_line_naming_the_field(tmp_path, ctx, w, conc, says):
    dep = tmp_path / "dep.toml"
    dep.write_text(DEP.format(ctx=ctx, w=w, conc=conc))
    res = CliRunner().invoke(app, ["advise", str(dep), "-j", "1", "--point-dir", str(tmp_path / "p")],
                             env={"COLUMNS": "300"})
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and res.stderr.strip().count("\n") == 0
    assert res.stderr.startswith(f"error: {dep}: {says}")
