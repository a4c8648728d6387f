"""One factory picks a real-mode backend by --engine (and --server), and each declares what it
can run; the commands read those capabilities instead of comparing engine names."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.errors import UserError
from mtpsim.real import BACKENDS, ENGINES, backend
from mtpsim.spec import experiment_from_dict


def test_every_engine_and_variant_has_a_backend_that_names_itself():
    assert ENGINES == ("reference", "vllm", "sglang")
    for engine, served in BACKENDS:
        in_process_too = (engine, False) in BACKENDS
        b = backend(engine, server=served and in_process_too)  # --server only picks a variant
        assert b.name == engine and b.caps.served == served
    assert backend("vllm").caps.gpus and not backend("reference").caps.gpus
    assert backend("reference").caps.rounds and not backend("reference", server=True).caps.rounds


def test_unknown_engines_and_a_server_flag_where_it_always_serves_are_one_line():
    with pytest.raises(UserError, match="expected one of reference, vllm, sglang, got 'trt'"):
        backend("trt")
    with pytest.raises(UserError, match="--server.*vllm always serves"):
        backend("vllm", server=True)


def test_the_commands_refuse_what_the_backend_cannot_run_before_any_work(tmp_path):
    run = CliRunner().invoke(app, ["run-real", "experiments/reference-cpu.toml", "--engine", "trt",
                                   "--out", str(tmp_path / "o")])
    assert run.exit_code == 2 and "expected one of reference, vllm, sglang" in run.output
    sweep = CliRunner().invoke(app, ["sweep", "experiments/pr47352.toml", "--engine", "vllm",
                                     "--server", "--out", str(tmp_path / "s")])
    assert sweep.exit_code == 2 and "always serves" in sweep.output
    assert not (tmp_path / "o").exists() and not (tmp_path / "s").exists()


def test_policies_a_served_engine_lacks_are_refused_by_its_backend():
    exp = experiment_from_dict({"model": {"name": "deepseek-ai/DeepSeek-V3.2"},
                                "policies": ["fresh", "share_recent"]})
    for engine in ("vllm", "sglang"):
        with pytest.raises(UserError, match="share_recent"):
            backend(engine).refuse(exp, exp.policies)
    backend("reference").refuse(exp, exp.policies)  # the reference engine runs all of them
