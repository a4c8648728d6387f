"""`mtpsim doctor --smoke` on this GPU-less machine (the real probe): exit 1, every check one
line, each FAIL followed by its fix, no traceback, in under 10 s (it reads files and small
tools, it does not import torch or vLLM); --json says the same; an experiment is refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from mtpsim.doctor.smoke import SMOKE_CHECKS

pytestmark = pytest.mark.slow  # starts whole processes (conftest)


def _doctor(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "COLUMNS": "250"}
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "mtpsim", "doctor", "--smoke", *args], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    return res, time.monotonic() - t0


def test_smoke_doctor_fails_each_missing_gpu_part_with_its_fix_in_seconds():
    res, wall = _doctor()
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert wall < 10.0, f"{wall:.1f} s"
    assert "Traceback" not in out
    lines = res.stdout.splitlines()
    rows = {m[2]: m[1] for line in lines if (m := re.match(r"^(OK|WARN|FAIL|SKIP) +(\S+) ", line))}
    assert len(rows) == len(SMOKE_CHECKS), res.stdout
    fails = [i for i, line in enumerate(lines) if line.startswith("FAIL")]
    assert fails and all(lines[i + 1].lstrip().startswith("fix: ") for i in fails)
    assert rows["driver"] == "FAIL" and rows["gpu"] == "FAIL"  # no GPU here
    assert rows["torch"] == "FAIL"  # CI's torch is the CPU build
    assert lines[-1] == f"{len(fails)} FAIL: fix those before run-real"


def test_smoke_doctor_json_lists_the_same_checks():
    res, _ = _doctor("--json")
    assert res.returncode == 1
    data = json.loads(res.stdout)
    assert data["mode"] == "smoke" and data["ok"] is False
    assert all(c["fix"] for c in data["checks"] if c["status"] == "FAIL")


def test_smoke_doctor_takes_no_experiment():
    res, _ = _doctor("experiments/pr47352.toml")
    assert res.returncode == 2
    assert "--smoke" in res.stdout + res.stderr and "Traceback" not in res.stdout + res.stderr
