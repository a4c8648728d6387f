"""Windows gives redirected output cp1252, which has no − (U+2212) or Δ: `mtpsim simulate ... >
out.txt` ended in a UnicodeEncodeError traceback after printing half a report. A stream that
cannot encode a character now gets an ASCII stand-in (else "?"), and the command succeeds."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.console import degrade_unencodable

ROOT = Path(__file__).resolve().parents[1]
PR = str(ROOT / "experiments" / "pr47352.toml")


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_report_to_a_non_utf8_stream_prints_stand_ins_not_a_traceback(encoding):
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", PR, "--set",
                        "workload.num_prompts=8"], capture_output=True, cwd=ROOT, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert b"Traceback" not in r.stderr
    out = r.stdout.decode(encoding)
    assert "this simulation: -" in out  # the prose minus (U+2212) as "-"
    assert "d share" in out and "Output token throughput" in out  # the table, its Δ column as "d"


def test_a_utf8_stream_and_an_explicit_error_handler_are_left_alone():
    utf8 = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    degrade_unencodable(utf8)
    assert utf8.errors == "strict"
    chosen = io.TextIOWrapper(io.BytesIO(), encoding="cp1252", errors="ignore")
    degrade_unencodable(chosen)
    assert chosen.errors == "ignore"
    strict = io.TextIOWrapper(io.BytesIO(), encoding="cp1252")
    degrade_unencodable(strict)
    strict.write("\u2212 1.5 \u00b5s \u2502 \u4e2d\n")
    strict.flush()
    assert strict.buffer.getvalue().decode("cp1252") == "- 1.5 \u00b5s | ?\n"  # µ is cp1252's own
