"""`run-real --server` starts `python -m mtpsim serve-reference` (and vLLM) as children. Launched
from a folder that holds a directory named `mtpsim`, a plain `python -m` would import that
folder; the runner's command lines (`-P`) import the installed package."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mtpsim import __version__
from mtpsim.spec import experiment_from_dict
from mtpsim.vllm_runner.argv import MTPSIM_CLI, VLLM_CLI, reference_serve_argv

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

SHADOW = "import sys; print('shadow package imported'); sys.exit(3)\n"


def test_a_folder_named_mtpsim_in_the_working_folder_is_not_imported(tmp_path):
    shadow = tmp_path / "mtpsim"
    shadow.mkdir()
    (shadow / "__init__.py").write_text(SHADOW)
    (shadow / "__main__.py").write_text(SHADOW)

    plain = subprocess.run([sys.executable, "-m", "mtpsim", "--version"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert plain.returncode == 3  # the hazard is real: plain `python -m` takes the folder

    argv = reference_serve_argv(experiment_from_dict({}), "share", 8000)
    assert argv[:len(MTPSIM_CLI)] == MTPSIM_CLI and "-P" in MTPSIM_CLI and "-P" in VLLM_CLI
    child = subprocess.run([*MTPSIM_CLI, "--version"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert child.returncode == 0, child.stdout + child.stderr
    assert child.stdout.strip() == f"mtpsim {__version__}"
