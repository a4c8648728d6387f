"""`--plot DIR` on simulate, sweep and compare writes the figures the issue names, and the
simulate report carries the terminal acceptance bars."""

import json

import pytest
from _sweep_experiment import write_small
from _synthetic_traces import REFERENCE_SPEC as REFERENCE
from _synthetic_traces import write_policy_traces
from typer.testing import CliRunner

from mtpsim.cli import app

PNG = b"\x89PNG\r\n\x1a\n"


def run(args):
    res = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    return res.output


def pngs(d):
    files = sorted(p.name for p in d.glob("*.png"))
    assert all((d / f).read_bytes()[:8] == PNG for f in files)
    return files


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("tr")
    return write_policy_traces(d, n_requests=20)


def test_simulate_with_traces_plots_acceptance_and_overlap_and_prints_bars(tmp_path, traces):
    exp = tmp_path / "ref.toml"
    exp.write_text(REFERENCE)
    text = run(["simulate", str(exp), "--trace", str(traces[0]), "--trace", str(traces[1]),
                "--plot", str(tmp_path / "p"), "--out", str(tmp_path / "sim")])
    assert pngs(tmp_path / "p") == ["acceptance.png", "overlap-share.png"]
    assert "Per-position acceptance" in text and "█" in text
    assert "Acceptance fit" in text and "Step-cost fit" in text and "R²" in text


def test_sweep_plots_throughput_and_tpot_against_each_axis(tmp_path):
    run(["sweep", str(write_small(tmp_path)), "--set", "speculative.num_speculative_tokens=1,2",
         "--set", "workload.max_concurrency=1,4", "-j", "1", "--plot", str(tmp_path / "p")])
    assert pngs(tmp_path / "p") == ["sweep-speculative_num_speculative_tokens.png",
                                    "sweep-workload_max_concurrency.png"]


def test_compare_plots_sim_vs_real_and_acceptance_per_mode(tmp_path):
    exp = write_small(tmp_path)
    run(["simulate", str(exp), "--out", str(tmp_path / "a")])
    run(["simulate", str(exp), "--seed", "5", "--out", str(tmp_path / "b")])
    # a second simulation stands in for the "real" side: relabel its mode
    for f in (tmp_path / "b").glob("*.json"):
        obj = json.loads(f.read_text())
        obj["mode"] = "reference"
        f.write_text(json.dumps(obj))
    run(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--plot", str(tmp_path / "p")])
    assert pngs(tmp_path / "p") == ["acceptance-real.png", "acceptance-sim.png", "sim-vs-real.png"]
