"""`run-real experiments/pr47352.toml --engine vllm` without `workload.dataset_path` took ~18-25 s
on a CPU machine before its one-line dataset_path error: the server's argv was built first, and
that imports vLLM (its SpeculativeConfig, and its serve parser for `[vllm] extra_args`). The
workload's prompts are now built first, so the same error comes before vLLM is imported.

vLLM is faked as missing here (any import of it, and its serve parser, is recorded and raises
ImportError, as on a machine without vLLM), so this holds with or without vLLM installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import mtpsim.vllm_runner.owned_flags as owned_flags
from mtpsim.errors import UserError
from mtpsim.spec import load_experiment
from mtpsim.vllm_runner.runner import ServedRun, run_served_policy

PR = Path(__file__).resolve().parents[1] / "experiments" / "pr47352.toml"


class _NoVllm:
    """A meta-path finder that records each import of vllm and refuses it."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if name == "vllm" or name.startswith("vllm."):
            self.asked.append(name)
            raise ImportError(f"{name} (faked missing)")
        return None


@pytest.fixture
def no_vllm(monkeypatch) -> list[str]:
    finder = _NoVllm()
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)  # put back after the test
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])

    def parser():  # cached per process: a test before this one may have built the real one
        finder.asked.append("serve_parser")
        raise ImportError("vllm (faked missing)")

    monkeypatch.setattr(owned_flags, "serve_parser", parser)
    return finder.asked


def test_a_missing_dataset_path_is_refused_before_vllm_is_imported(tmp_path, no_vllm):
    exp = load_experiment(str(PR), [])
    assert exp.vllm.extra_args and not exp.workload.dataset_path  # the case: both to check
    with pytest.raises(UserError) as e:
        run_served_policy(exp, "fresh", run=ServedRun("vllm", tmp_path))
    assert str(e.value) == (f"{PR}: workload.dataset_path: expected the folder holding "
                            "throughput_16k.jsonl (docs/real-mode.md)")
    assert no_vllm == []


def test_vllm_is_still_asked_once_the_dataset_is_found(tmp_path, no_vllm):
    data = tmp_path / "speed"
    data.mkdir()
    (data / "throughput_16k.jsonl").write_text(
        '{"category": "low_entropy", "messages": [{"content": "hello there"}]}\n')
    exp = load_experiment(str(PR), [f"workload.dataset_path={data}", "workload.num_prompts=1",
                                     "workload.max_input_len=0"])
    with pytest.raises(UserError, match="vLLM is not importable here"):
        run_served_policy(exp, "fresh", run=ServedRun("vllm", tmp_path / "out"))
    assert no_vllm  # the server's argv (SpeculativeConfig, extra_args) still asks vLLM
