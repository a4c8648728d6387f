"""`run-real --out DIR` keeps a policy's finished result, DIR/POLICY.json (pooled over rounds or
of one run), on a rerun. run-real writes the trace before the result, so a result there without
DIR/POLICY.trace.jsonl had its trace moved or deleted; it was kept without a word, and the run
ended "results and traces in DIR/" with the trace that simulate --trace reads missing. Now it is
one line naming the result and the missing trace, exit 2, before anything runs; the result is
kept, and `--force` reruns (writing both)."""

import pytest
from test_run_real_reference_writes_results_and_traces import _setup
from typer.testing import CliRunner

from mtpsim.cli import app


def _run(spec, out, *extra):
    res = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out), "-p", "fresh",
                                   "--no-probe", *extra])
    return res.exit_code, " ".join(res.output.split())


@pytest.mark.parametrize("rounds", ["1", "2"])  # one run's result, the rounds' pooled result
def test_a_kept_result_whose_trace_is_gone_is_named(tmp_path, rounds):
    spec, out = _setup(tmp_path), tmp_path / "out"
    assert _run(spec, out, "--rounds", rounds)[0] == 0
    result, trace = out / "fresh.json", out / "fresh.trace.jsonl"
    kept, said = _run(spec, out, "--rounds", rounds)  # with its trace: kept, as before
    assert kept == 0 and "fresh: kept" in said, said
    trace.unlink()
    before = result.read_bytes()
    code, said = _run(spec, out, "--rounds", rounds)
    assert code == 2 and said.startswith(f"error: {result}: expected its trace fresh.trace.jsonl "
                                         "beside it"), said
    assert "--force" in said and "Traceback" not in said and result.read_bytes() == before
    assert _run(spec, out, "--rounds", rounds, "--force")[0] == 0
    assert trace.is_file() and result.is_file()


def test_a_real_sweeps_result_whose_trace_is_gone_is_named(tmp_path):
    import subprocess
    import sys

    from _cli import ROOT

    sweep = [sys.executable, "-m", "mtpsim", "sweep", "experiments/reference-cpu.toml", "--engine",
             "reference", "-j", "1", "--set", "workload.num_prompts=1", "--set",
             "workload.input_len=32", "--set", "workload.output_len=4", "--set",
             "speculative.index_topk=16", "--set", "policies=[\"fresh\"]", "--out", str(tmp_path)]
    assert subprocess.run(sweep, capture_output=True, cwd=ROOT, timeout=600).returncode == 0
    (result,) = tmp_path.glob("points/*/r0/fresh.json")
    result.with_suffix(".trace.jsonl").unlink()
    r = subprocess.run(sweep, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"error: {result}: expected its trace fresh.trace.jsonl beside it (the sweep writes each "
        "trace before its result, so it was moved or deleted): put it back, or move this result "
        "aside (the sweep then reruns it), or choose another --out"], r.stderr
