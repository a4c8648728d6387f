"""`mtpsim sweep --engine reference --out DIR` resumes the repeats whose results are in DIR. A
result there that does not read (cut short), or that holds another engine's run, was taken for
"not done": the repeat reran and replaced it, silently, and a missing policy's repeat was rerun
without looking at its other policies' files. Now each is one line naming the file (exit 2)
before any point runs, and the file is kept. The sweep's progress bar is not drawn on a stderr
that is not a terminal, so that line is the only one (rich used to end the bar with a blank line)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ["sweep", "experiments/reference-cpu.toml", "--engine", "reference", "-j", "1",
         "--set", "workload.num_prompts=1,2", "--set", "workload.input_len=32",
         "--set", "workload.output_len=4", "--set", "speculative.index_topk=16",
         "--set", "policies=[\"fresh\"]"]


def _sweep(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", *SWEEP, "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_a_damaged_or_foreign_result_is_named_and_kept(tmp_path):
    out = tmp_path / "sw"
    first = _sweep(out)
    assert first.returncode == 0, first.stderr
    assert "" not in first.stderr.splitlines()  # no blank line left by a progress bar
    results = sorted(out.glob("points/*/r0/fresh.json"))
    assert len(results) == 2
    damaged, foreign = results
    text = damaged.read_text()[:1000]
    damaged.write_text(text)
    r = _sweep(out)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {damaged}: expected JSON ("), r.stderr
    assert "move it aside to keep it" in lines[0] and damaged.read_text() == text

    damaged.unlink()  # moved aside: that repeat reruns; the other holds another engine's result
    obj = json.loads(foreign.read_text())
    obj["mode"] = "vllm"
    foreign.write_text(json.dumps(obj))
    r = _sweep(out)
    assert r.returncode == 2 and r.stderr.splitlines()[0].startswith(
        f"error: {foreign}: mode: expected a reference result of this sweep, got a vllm one"), r.stderr
    assert len(r.stderr.splitlines()) == 1 and not damaged.exists()
