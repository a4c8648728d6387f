"""`run-real --engine vllm` with a policy vLLM cannot run (`share_recent`, `target_share`)
stops before the first server starts, not after the runnable policies have run."""

from __future__ import annotations

from typer.testing import CliRunner

import mtpsim.vllm_runner.runner as runner_mod
from mtpsim.cli import app


def test_an_unsupported_policy_is_refused_before_any_policy_runs(tmp_path, monkeypatch):
    started: list[str] = []
    monkeypatch.setattr(runner_mod, "run_served_policy",
                        lambda exp, policy, progress=None, **kw: started.append(policy))
    res = CliRunner().invoke(app, ["run-real", "experiments/pr47352.toml", "--engine", "vllm",
                                   "--out", str(tmp_path / "out"), "-p", "fresh",
                                   "-p", "share_recent", "-p", "target_share"])
    assert res.exit_code == 2, res.output
    assert started == []
    line = " ".join(res.output.split())
    assert "policies: expected only fresh, share with --engine vllm" in line
    assert "share_recent, target_share" in line
    assert "Traceback" not in res.output


def test_the_reference_engine_still_runs_every_policy(tmp_path, monkeypatch):
    from mtpsim.real import reference

    started: list[str] = []

    def fake(exp, policy, progress=None, requests=None, level=False):  # requests: one round's
        started.append(policy)
        raise KeyboardInterrupt  # stop after the first: only the order matters here

    monkeypatch.setattr(reference.InProcessReference, "runner", lambda self, *a, **k: fake)
    res = CliRunner().invoke(app, ["run-real", "experiments/reference-cpu.toml",
                                   "--out", str(tmp_path / "out"), "-p", "share_recent"])
    assert started == ["share_recent"], res.output
