"""The `mtpsim` entry point starts numpy's OpenBLAS with one thread (its thread pool costs CPU at
import on every run), unless the caller chose a number; numpy is not imported before it. The
programs run-real starts that are not mtpsim (a vLLM server, `vllm bench serve`) get the
caller's environment: without the setting the entry point added, with the caller's own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = ("import sys, os; from mtpsim import cli; assert 'numpy' not in sys.modules; "
         "sys.argv = ['mtpsim', '--version']\n"
         "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
         "print(os.environ.get('OPENBLAS_NUM_THREADS'))")
# After the entry point ran: what a server started by ServerProcess sees, and what the
# `vllm bench serve` client is handed (mtpsim.vllm_runner.runner passes user_environ()).
CHILD = "import sys; from pathlib import Path; log = Path(sys.argv[1])\n" + PROBE + """
import numpy
from mtpsim.blas_threads import user_environ
from mtpsim.vllm_runner.process import ServerProcess
server = ServerProcess([sys.executable, "-c", "import os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"],
                       {}, log, 1)
server.start()
server.proc.wait(timeout=60)
print(log.read_text().strip())
print(user_environ().get('OPENBLAS_NUM_THREADS'))
"""


def _run(code: str, env_value: str | None, *args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    return out.stdout.strip().splitlines()


def test_one_blas_thread_unless_the_caller_chose():
    assert _run(PROBE, None)[-1] == "1"
    assert _run(PROBE, "3")[-1] == "3"


@pytest.mark.slow  # starts whole processes and a server process (conftest)
def test_the_servers_run_real_starts_get_the_callers_environment(tmp_path):
    # unset by the caller: this process runs one thread, the server and client see no setting
    assert _run(CHILD, None, str(tmp_path / "a.log"))[-3:] == ["1", "None", "None"]
    # the caller's own setting, even the same "1", reaches them
    assert _run(CHILD, "1", str(tmp_path / "b.log"))[-3:] == ["1", "1", "1"]
    assert _run(CHILD, "4", str(tmp_path / "c.log"))[-3:] == ["4", "4", "4"]
