"""`mtpsim --help`, `mtpsim serve-reference --help` and `mtpsim run-real --help` start
without importing vllm, torch, aiohttp, fastapi or uvicorn (they are imported lazily)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

HEAVY = ("vllm", "torch", "aiohttp", "fastapi", "uvicorn")


def test_help_of_the_real_mode_commands_imports_nothing_heavy():
    code = ("import sys\n"
            "from typer.testing import CliRunner\n"
            "from mtpsim.cli import app\n"
            "for args in ([\"--help\"], [\"serve-reference\", \"--help\"],"
            " [\"run-real\", \"--help\"]):\n"
            "    r = CliRunner().invoke(app, args)\n"
            "    assert r.exit_code == 0, r.output\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
