"""The `mtpsim` entry point starts numpy's OpenBLAS with one thread (its thread pool costs CPU at
import on every run), unless the caller chose a number; numpy is not imported before it."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = ("import sys, os; from mtpsim import cli; assert 'numpy' not in sys.modules; "
         "sys.argv = ['mtpsim', '--version']\n"
         "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
         "print(os.environ.get('OPENBLAS_NUM_THREADS'))")


def _threads(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_one_blas_thread_unless_the_caller_chose():
    assert _threads(None) == "1"
    assert _threads("3") == "3"
