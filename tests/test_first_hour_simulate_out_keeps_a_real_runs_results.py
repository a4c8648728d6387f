"""`simulate --out DIR` where DIR holds a real run's DIR/POLICY.json (the run-real --out folder,
typed by mistake) is one line, exit 2, before anything runs, and the real result is kept: it
wrote the simulated result over it, losing the run. A simulated result there is replaced."""

from _sweep_experiment import write_small
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.request_record import RequestRecord
from mtpsim.result import Result, load_result


def test_a_real_result_in_out_is_refused_and_kept(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    out.mkdir()
    reqs = [RequestRecord("r0", 100, 51, 0.0, 0.1, 1.1, [0.02] * 50, [1] * 50, 20, 60, 30, [12, 10, 8])]
    Result.from_requests(mode="reference", policy="fresh", requests=reqs, duration_s=1.0).write(
        out / "fresh.json")
    before = (out / "fresh.json").read_bytes()
    res = CliRunner().invoke(app, ["simulate", str(exp), "--out", str(out)])
    line = " ".join(res.output.split())
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert ("fresh.json: expected no result here, or a simulated one to replace, got a real "
            "run's (reference)") in line
    assert (out / "fresh.json").read_bytes() == before and not (out / "share.json").exists()


def test_a_simulated_result_in_out_is_replaced(tmp_path):
    exp, out = write_small(tmp_path), tmp_path / "out"
    for _ in range(2):
        res = CliRunner().invoke(app, ["simulate", str(exp), "--out", str(out)])
        assert res.exit_code == 0, res.output
    assert load_result(out / "fresh.json").mode == "simulate"
