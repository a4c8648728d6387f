"""`mtpsim simulate` and `mtpsim calibrate` from the command line (typer's CliRunner)."""

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.result import load_result

SMALL = """
description = "small"
seed = 1
policies = ["fresh", "share"]
[engine]
tp = 8
max_num_seqs = 8
[workload]
num_prompts = 12
input_len = 3000
output_len = 100
max_concurrency = 4
[calibration]
mem_efficiency = 0.5
fit = ["mem_efficiency"]
[calibration.measured.fresh]
output_throughput = 300.0
median_tpot_ms = 12.0
"""


def write(tmp_path: Path, text: str = SMALL) -> Path:
    p = tmp_path / "exp.toml"
    p.write_text(text)
    return p


def test_simulate_prints_the_pr_table_phases_and_measured_rows(tmp_path):
    res = CliRunner().invoke(app, ["simulate", str(write(tmp_path))], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    for text in ("Output token throughput (tok/s)", "Δ share", "Pos 2 (%)",
                 "draft_decode_indexer", "share vs fresh: output throughput",
                 "Simulated vs measured", "x real time"):
        assert text in res.output


def test_simulate_json_and_out_write_results(tmp_path):
    out = tmp_path / "runs"
    res = CliRunner().invoke(app, ["simulate", str(write(tmp_path)), "--json", "--out", str(out),
                                   "-p", "share", "--seed", "5"])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert list(payload["results"]) == ["share"]
    r = payload["results"]["share"]
    assert r["policy"] == "share" and r["seed"] == 5 and r["mode"] == "simulate"
    assert r["completed"] == 12 and "draft_decode_indexer" in r["phases"]
    assert r["spec"]["workload"]["num_prompts"] == 12
    saved = load_result(out / "share.json")
    assert saved.policy == "share" and len(saved.requests) == 12
    assert saved.get("output_throughput") == r["output_throughput"]


def test_bad_input_exits_2_with_one_line(tmp_path):
    p = write(tmp_path)
    for args in (["--set", "workload.max_concurrency=0"], ["--set", "engine.tp=3"],
                 ["-p", "nonsense"]):
        res = CliRunner().invoke(app, ["simulate", str(p), *args])
        assert res.exit_code == 2, res.output
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), res.output
        assert "Traceback" not in res.output
    res = CliRunner().invoke(app, ["simulate", str(tmp_path / "missing.toml")])
    assert res.exit_code == 2 and "experiment file not found" in res.output


def test_calibrate_reports_the_fit_and_writes_the_factor_back(tmp_path):
    p = write(tmp_path)
    res = CliRunner().invoke(app, ["calibrate", str(p), "--json"])
    assert res.exit_code == 0, res.output
    fit = json.loads(res.stdout)
    assert set(fit["after"]) == {"mem_efficiency"}
    res = CliRunner().invoke(app, ["calibrate", str(p), "--write"])
    assert res.exit_code == 0, res.output
    text = p.read_text()
    assert f"mem_efficiency = {fit['after']['mem_efficiency']:.6g}" in text
    assert text.count("mem_efficiency =") == 1 and "median_tpot_ms = 12.0" in text


def test_the_shipped_experiment_runs_from_the_command_line(tmp_path):
    exp = Path(__file__).resolve().parents[1] / "experiments" / "pr47352.toml"
    shutil.copy(exp, tmp_path / "pr.toml")
    res = CliRunner().invoke(app, ["simulate", str(tmp_path / "pr.toml"), "--seed", "3"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "measured" in res.output and "1,629.90*" in res.output and "saves" in res.output


def test_measured_rows_are_hidden_when_overrides_change_the_setup(tmp_path):
    res = CliRunner().invoke(app, ["simulate", str(write(tmp_path)), "--set",
                                   "workload.output_len=50"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "measured rows not shown" in res.output and "Simulated vs measured" not in res.output


def test_calibrate_without_a_measured_row_exits_2(tmp_path):
    p = write(tmp_path, SMALL.split("[calibration]")[0])
    res = CliRunner().invoke(app, ["calibrate", str(p)])
    assert res.exit_code == 2
    assert "calibration.measured.fresh" in res.output and "Traceback" not in res.output
    # says what to add: the table and the metrics the fit needs
    assert "[calibration.measured.fresh] table" in res.output and "median_tpot_ms" in res.output


def test_calibrate_does_not_write_factors_fitted_to_another_setup(tmp_path):
    p = write(tmp_path)
    before = p.read_text()
    res = CliRunner().invoke(app, ["calibrate", str(p), "--write",
                                   "--set", "workload.output_len=50"])
    assert res.exit_code == 2, res.output
    assert "--write: expected no --set that changes the measured setup" in res.output
    assert p.read_text() == before
    res = CliRunner().invoke(app, ["calibrate", str(p), "--write", "--set", "seed=2"])
    assert res.exit_code == 0, res.output
    assert "a what-if, not a calibration" not in res.output  # a seed is not the setup


def test_calibrate_without_write_at_another_setup_says_it_is_a_what_if(tmp_path):
    """Without --write the fit runs, but it fits the file's measured rows at the --set setup:
    it says so (and --json names the changes), where it printed the factors without a word."""
    p = write(tmp_path)
    res = CliRunner().invoke(app, ["calibrate", str(p), "--set", "workload.output_len=50"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "warning: fitted at workload.output_len=50 to rows measured at the experiment file's setup" \
        in res.output
    res = CliRunner().invoke(app, ["calibrate", str(p), "--json", "--set", "workload.output_len=50"])
    assert json.loads(res.stdout)["setup_changed_by_set"] == ["workload.output_len=50"]


def test_calibrate_write_keeps_the_file_when_the_fit_did_not_converge(tmp_path, monkeypatch):
    import dataclasses

    import mtpsim.calibration.factors as sim_calibrate

    real_calibrate = sim_calibrate.calibrate

    def stopped_short(exp):
        return dataclasses.replace(real_calibrate(exp), success=False,
                                   message="The maximum number of function evaluations is exceeded.")

    monkeypatch.setattr(sim_calibrate, "calibrate", stopped_short)
    p = write(tmp_path)
    before = p.read_text()
    res = CliRunner().invoke(app, ["calibrate", str(p), "--write"])
    assert res.exit_code == 1, res.output
    assert "not written: the fit did not converge" in res.output
    assert p.read_text() == before
