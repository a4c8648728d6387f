"""`mtpsim doctor` answers its vLLM questions (speculator shape, environment variables,
Triton) from vLLM's installed source instead of importing vLLM: importing it imports torch's
compiler (tens of seconds on a loaded machine) and logs `Failed to import from vllm._C` on a
machine without vLLM's optional C extensions. The source reading must reach the same verdicts
as the import-based checks the plugin uses at run time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.doctor.probe import Probe, _vllm_source
from mtpsim.vllm_plugin.contract import (
    BASE_MODULE,
    MTP_MODULE,
    IncompatibleVllmError,
    _module_file,
    check_speculator_source,
)

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("vllm")


def test_doctor_imports_no_vllm_module_and_prints_no_vllm_log_line():
    code = ("import sys\nfrom mtpsim.cli import app\ntry:\n    app(['doctor'])\nexcept SystemExit:\n"
            "    pass\nprint('VLLM-MODULES', sorted(m for m in sys.modules if m.split('.')[0] == 'vllm'))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert "VLLM-MODULES []" in p.stdout, p.stdout[-2000:]
    assert "vllm._C" not in p.stdout + p.stderr
    assert p.stdout.splitlines()[0].startswith("OK   python")  # the checklist is the first line
    assert "docs/real-mode.md" in p.stdout and "pip install vllm==0.33.0 (" not in p.stdout


def test_source_reading_agrees_with_the_installed_classes():
    probe = Probe()
    assert probe.speculator_problem() is None
    assert "VLLM_USE_V2_MODEL_RUNNER" in probe.vllm_env_names()
    import vllm.envs  # the slow import, here only to compare against

    assert probe.vllm_env_names() == set(vllm.envs.environment_variables)


@pytest.mark.parametrize("edit, problem", [
    (("def on_prefill_end(self, num_reqs: int) -> None:",
      "def on_prefill_end(self, last_token_indices) -> None:"),
     "MTPSpeculator.on_prefill_end(self, last_token_indices) should be (self, num_reqs: int)"),
    (("share_mtp_topk_indices: bool = False", "other_flag: bool = False"),
     "MTPSpeculator.share_mtp_topk_indices (a bool) is missing"),
    (("class MTPSpeculator(TargetDependentARSpeculator):", "class MTPSpeculator(object):"),
     "does not subclass TargetDependentARSpeculator"),
    (("def on_multi_step_decode_end(self, num_reqs: int) -> None:",
      "def on_multi_step_decode_end(self, num_reqs: str) -> None:"), "num_reqs should be an int"),
])
def test_a_changed_speculator_source_is_refused_with_the_problem(edit, problem):
    mtp_file = _module_file(MTP_MODULE)
    text = _vllm_source(mtp_file)
    assert edit[0] in text  # else the edit would test nothing

    def read(rel: str) -> str | None:
        return text.replace(*edit) if rel == mtp_file else _vllm_source(rel)

    check_speculator_source(_vllm_source, "0.33.0")  # unchanged: accepted
    with pytest.raises(IncompatibleVllmError, match="vLLM 9.9 is installed") as e:
        check_speculator_source(read, "9.9")
    assert problem in str(e.value)


def test_a_missing_speculator_module_is_refused():
    base = _module_file(BASE_MODULE)
    with pytest.raises(IncompatibleVllmError, match="is missing"):
        check_speculator_source(lambda rel: None if rel == base else _vllm_source(rel), "9.9")
