"""Ctrl-C during `mtpsim run-real` ends with one line: the policies kept (with their files), the
ones not kept (the one in progress, with how far it got, and those not started), and the command
that resumes; exit code 130. The printed command, run as printed, finishes the rest."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _reference_models import tiny_spec
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.result import load_result

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

SPEC = """
seed = 3
policies = ["fresh", "share", "share_recent"]
[speculative]
num_speculative_tokens = 2
index_topk = 8
[workload]
num_prompts = {n}
input_len = 20
output_len = {out}
max_concurrency = 2
[reference]
weights = "{weights}"
device = "cpu"
threads = 1
"""


def _spec(tmp_path: Path, n: int, out: int) -> Path:
    return tiny_spec(tmp_path, SPEC, n=n, out=out)


def _interrupted_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.startswith("interrupted:")]
    assert len(lines) == 1, text
    return lines[0]


def test_the_line_names_kept_lost_and_the_resume_command(tmp_path, monkeypatch):
    from mtpsim.engine.runner import run_policy
    from mtpsim.real.reference import InProcessReference

    def interrupt_share(exp, policy, progress, level=False):
        if policy == "share":
            progress(1, exp.workload.num_prompts)
            raise KeyboardInterrupt
        return run_policy(exp, policy, progress, level=level)

    monkeypatch.setattr(InProcessReference, "target", f"{__name__}:_runner")
    monkeypatch.setattr(sys.modules[__name__], "_runner", interrupt_share, raising=False)
    spec, out = _spec(tmp_path, 3, 8), tmp_path / "out"
    res = CliRunner().invoke(app, ["run-real", str(spec), "--out", str(out), "--set", "seed=5",
                                   "-p", "fresh", "-p", "share", "-p", "share_recent"],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 130, res.output
    line = _interrupted_line(res.output)
    assert f"kept fresh ({out / 'fresh.json'})" in line
    assert "share (in progress, 1/3 requests done" in line
    assert "share_recent (not started)" in line
    resume = shlex.split(line.split("resume: ", 1)[1])
    assert resume == ["mtpsim", "run-real", str(spec), "--out", str(out), "--set", "seed=5",
                      "-p", "fresh", "-p", "share", "-p", "share_recent"]
    assert (out / "fresh.json").is_file() and not (out / "share.json").exists()
    assert "Traceback" not in res.output


def test_a_real_sigint_prints_the_line_and_the_printed_command_resumes(tmp_path):
    spec, out = _spec(tmp_path, 2, 160), tmp_path / "out"
    # A shell's background job inherits SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: give the child the terminal's default, as a user's shell does.
    proc = subprocess.Popen([sys.executable, "-m", "mtpsim", "run-real", str(spec), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 180
        while not (out / "fresh.json").is_file():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, text
    assert not (out / "share.json").exists(), "share finished before the signal: make it longer"
    line = _interrupted_line(text)
    assert "kept fresh" in line and "share (in progress" in line and "share_recent (not started)" in line
    assert "Traceback" not in text

    argv = shlex.split(line.split("resume: ", 1)[1])
    assert argv[:2] == ["mtpsim", "run-real"]
    rerun = subprocess.run([sys.executable, "-m", "mtpsim", *argv[1:]], capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "fresh: kept" in rerun.stderr
    assert {load_result(out / f"{p}.json").policy for p in ("fresh", "share", "share_recent")} == {
        "fresh", "share", "share_recent"}


def test_other_commands_end_a_ctrl_c_with_one_line_and_the_rerun(tmp_path, monkeypatch):
    import mtpsim.runs.simulate as sim

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(sim, "run_policies", interrupted)
    monkeypatch.setattr(sys, "argv", ["mtpsim", "simulate", "exp.toml", "--out", "runs/s"])
    res = CliRunner().invoke(app, ["simulate", str(_spec(tmp_path, 2, 8))])
    assert res.exit_code == 130
    assert _interrupted_line(res.output).endswith("rerun: mtpsim simulate exp.toml --out runs/s")
    assert "Traceback" not in res.output
