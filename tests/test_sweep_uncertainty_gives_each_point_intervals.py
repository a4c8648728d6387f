"""`mtpsim sweep --uncertainty N`: each grid point gets intervals and a delta verdict, its draws
are kept under --out, and a rerun reuses them."""

import json

from typer.testing import CliRunner

from mtpsim.cli import app

SMALL = """
seed = 2
policies = ["fresh", "share"]
[engine]
tp = 8
max_num_seqs = 8
[workload]
num_prompts = 8
input_len = 2000
output_len = 40
max_concurrency = 4
"""


def test_each_point_has_intervals_and_a_rerun_reuses_its_draws(tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text(SMALL)
    args = ["sweep", str(exp), "--set", "workload.input_len=2000,8000", "--uncertainty", "3",
            "-j", "1", "--out", str(tmp_path / "out"), "--json"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    points = json.loads(res.stdout)["points"]
    assert [p["values"]["workload.input_len"] for p in points] == [2000, 8000]
    for p in points:
        fresh, share = p["rows"]
        assert fresh["output_throughput"]["lo"] <= fresh["output_throughput"]["median"]
        assert share["verdict"] in ("cannot tell", "share better", "share worse", "no practical difference")
    files = sorted((tmp_path / "out" / "uncertainty").glob("*.json"))
    assert len(files) == 2
    stamp = [f.stat().st_mtime_ns for f in files]
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and json.loads(again.stdout)["points"] == points
    assert [f.stat().st_mtime_ns for f in files] == stamp
