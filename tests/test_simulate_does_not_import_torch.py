"""`mtpsim --help` and `mtpsim simulate` start without torch (or vllm)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import sys
from typer.testing import CliRunner
from mtpsim.cli import app
r = CliRunner().invoke(app, ["--help"])
assert r.exit_code == 0, r.output
r = CliRunner().invoke(app, ["simulate", sys.argv[1], "--set", "workload.num_prompts=8",
                             "--set", "workload.output_len=64", "--json"])
assert r.exit_code == 0, r.output
heavy = sorted(m for m in ("torch", "vllm", "matplotlib", "aiohttp") if m in sys.modules)
print(",".join(heavy))
"""


def test_help_and_simulate_leave_heavy_modules_unimported():
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "experiments" / "pr47352.toml")],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
