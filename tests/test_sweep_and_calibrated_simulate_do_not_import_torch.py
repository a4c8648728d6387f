"""`mtpsim sweep` (in-process, -j 1) and `mtpsim simulate --trace` need neither torch nor
matplotlib unless a plot is asked for."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

EXPERIMENT = """
policies = ["fresh"]
[engine]
scheduler = "reference"
[speculative]
num_speculative_tokens = 3
index_topk = 64
[workload]
num_prompts = 4
input_len = 300
output_len = 20
"""

SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from typer.testing import CliRunner
from mtpsim.cli import app
from _synthetic_traces import make_trace
tmp = Path(sys.argv[3])
make_trace("fresh", 1, n_requests=12).write(tmp / "f.trace.jsonl")
exp = tmp / "e.toml"
r = CliRunner().invoke(app, ["sweep", sys.argv[1], "--set", "workload.num_prompts=4,8",
                             "--set", "workload.output_len=32", "-j", "1", "--json"])
assert r.exit_code == 0, r.output
r = CliRunner().invoke(app, ["simulate", str(exp), "--trace", str(tmp / "f.trace.jsonl"), "--json"])
assert r.exit_code == 0, r.output
print(",".join(sorted(m for m in ("torch", "matplotlib", "vllm") if m in sys.modules)))
"""


def test_sweep_and_trace_calibration_leave_heavy_modules_unimported(tmp_path):
    (tmp_path / "e.toml").write_text(EXPERIMENT)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "experiments" / "pr47352.toml"),
                          str(ROOT / "tests"), str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
