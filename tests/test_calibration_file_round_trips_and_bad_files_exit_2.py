"""A calibration file survives write -> read unchanged and drives `mtpsim simulate`; a bad
calibration or trace file is one line naming the file and the field, exit code 2."""

import json

import pytest
from _synthetic_traces import write_policy_traces
from typer.testing import CliRunner

from mtpsim.calibration import read_calibration
from mtpsim.calibration.fit import fit_traces
from mtpsim.cli import app

EXPERIMENT = """
description = "calibrated"
seed = 3
policies = ["fresh", "share"]
[engine]
scheduler = "reference"
[speculative]
num_speculative_tokens = 2
index_topk = 64
[workload]
num_prompts = 6
input_len = 400
output_len = 40
max_concurrency = 2
[calibration]
file = "cal.json"
"""


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("traces")
    return write_policy_traces(d, n_requests=30)


@pytest.fixture(scope="module")
def fitted(traces):
    from mtpsim.trace import read_trace

    return fit_traces([read_trace(p) for p in traces], [str(p) for p in traces])


def run(args):
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def test_written_calibration_reads_back_equal(tmp_path, fitted):
    cal = fitted
    cal.write(tmp_path / "cal.json")
    back = read_calibration(tmp_path / "cal.json")
    assert back.to_json() == json.loads(json.dumps(cal.to_json()))
    assert back.path == str(tmp_path / "cal.json")


def test_simulate_saves_the_fit_and_an_experiment_naming_it_gives_the_same_result(tmp_path, traces):
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    a = run(["simulate", str(exp), "--trace", str(traces[0]), "--trace", str(traces[1]),
             "--save-calibration", str(tmp_path / "cal.json"), "--json"])
    assert a.exit_code == 0, a.output
    b = run(["simulate", str(exp), "--json"])  # reads [calibration] file = "cal.json"
    assert b.exit_code == 0, b.output
    ra, rb = json.loads(a.output)["results"], json.loads(b.output)["results"]
    for policy in ("fresh", "share"):
        assert ra[policy]["output_throughput"] == rb[policy]["output_throughput"]
        assert ra[policy]["spec_decode_acceptance_length"] == rb[policy]["spec_decode_acceptance_length"]
    assert json.loads(a.output)["calibration"]["format"] == "mtpsim-calibration"


@pytest.mark.parametrize("mutate, field", [
    (lambda c: c.update(format="other"), "format"),
    (lambda c: c.update(version=99), "version"),
    (lambda c: c["acceptance"].update(base="x"), "acceptance.base"),
    (lambda c: c["cost"]["phases"].pop("verify"), "cost.phases.verify"),
    (lambda c: c["cost"]["phases"]["prefill"].update(coef=[1.0]), "cost.phases.prefill.coef"),
    (lambda c: c["acceptance"].update(sigma=-1.0), "acceptance.sigma"),
    (lambda c: c.update(workload_shift=[0.1]), "workload_shift"),
    (lambda c: c["workload_shift"].update(decode_sd=-0.1), "workload_shift.decode_sd"),
    (lambda c: c["workload_shift"].update(prefill_sd="wide"), "workload_shift.prefill_sd"),
    (lambda c: c["workload_shift"].update(decode_sd=True), "workload_shift.decode_sd"),
    (lambda c: c["workload_shift"].update(prefill_sd=5.0), "workload_shift.prefill_sd"),
    (lambda c: c["workload_shift"].update(source="guessed"), "workload_shift.source"),
    (lambda c: c["workload_shift"].update(kinds={"a": {"decode": -1}}), "workload_shift.kinds"),
])
def test_a_bad_calibration_file_is_one_line_naming_file_and_field(tmp_path, fitted, mutate, field):
    obj = fitted.to_json()
    mutate(obj)
    (tmp_path / "cal.json").write_text(json.dumps(obj))
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    res = run(["simulate", str(exp)])
    assert res.exit_code == 2
    lines = [ln for ln in res.output.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.output
    assert "cal.json" in lines[0] and field in lines[0]


def test_a_missing_calibration_file_and_a_policy_it_never_saw_are_user_errors(tmp_path, traces):
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    res = run(["simulate", str(exp)])
    assert res.exit_code == 2 and "cal.json" in res.output and "not found" in res.output
    # the hint names the command that writes one (calibrate writes no calibration file)
    assert "--save-calibration FILE" in res.output and "mtpsim calibrate" not in res.output
    res = run(["simulate", str(exp), "--trace", str(traces[0]), "-p", "target_share"])
    assert res.exit_code == 2 and "--trace" in res.output and "target_share" in res.output


def test_a_bad_trace_file_is_one_line_naming_the_file_and_line(tmp_path, traces):
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    bad = tmp_path / "bad.trace.jsonl"
    lines = traces[0].read_text().splitlines()
    bad.write_text("\n".join([lines[0], lines[1].replace('"num_reqs"', '"num_req"')]) + "\n")
    res = run(["simulate", str(exp), "--trace", str(bad)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "bad.trace.jsonl" in res.output and "line 2" in res.output
    res = run(["simulate", str(exp), "--save-calibration", str(tmp_path / "c.json")])
    assert res.exit_code == 2 and "--trace" in res.output


def test_a_refused_run_writes_no_calibration(tmp_path, traces):
    """--save-calibration wrote the fit, then the run refused a flag (-p bogus) with exit 2: a file
    the command never said it wrote. The fit is written once the run has passed its checks."""
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    cal = tmp_path / "cal.json"
    res = run(["simulate", str(exp), "--trace", str(traces[0]), "--trace", str(traces[1]),
               "--save-calibration", str(cal), "-p", "bogus"])
    assert res.exit_code == 2 and not cal.exists()
    res = run(["simulate", str(exp), "--trace", str(traces[0]), "--trace", str(traces[1]),
               "--save-calibration", str(cal)])
    assert res.exit_code == 0 and cal.exists()


def test_calibrate_refuses_an_experiment_priced_by_a_calibration_file(tmp_path, traces):
    """The file's fitted step cost replaces the roofline: calibrate's factors then changed nothing
    (0.7 -> 0.7, 'Jacobian condition inf', exit 0) and --write stored them anyway."""
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    assert run(["simulate", str(exp), "--trace", str(traces[0]), "--trace", str(traces[1]),
                "--save-calibration", str(tmp_path / "cal.json")]).exit_code == 0
    before = exp.read_text()
    res = run(["calibrate", str(exp), "--write"])
    assert res.exit_code == 2 and "calibration.file: expected none for calibrate" in res.output
    assert exp.read_text() == before


def test_a_trace_given_twice_is_refused(tmp_path, traces):
    """The same trace twice doubled its events (48 for 24) and fitted with more certainty than
    its data has, exit 0."""
    exp = tmp_path / "exp.toml"
    exp.write_text(EXPERIMENT)
    again = traces[0].parent / ".." / traces[0].parent.name / traces[0].name
    res = run(["simulate", str(exp), "--trace", str(traces[0]), "--trace", str(again)])
    assert res.exit_code == 2 and "--trace: expected each trace once" in res.output
