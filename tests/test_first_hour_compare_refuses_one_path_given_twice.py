"""`mtpsim compare d d` (one folder typed twice, or `d` and `./d/`) used to read the folder once
and compare it with nothing new, exit 0: a user who types two paths means two runs. Now one
line names the second argument and the first it repeats (exit 2). A file inside a folder also
given (`compare d d/fresh.json`) is still read once, as before."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PR = str(ROOT / "experiments/pr47352.toml")


def _mtpsim(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_one_folder_or_file_named_twice_is_one_line(tmp_path):
    r = _mtpsim(tmp_path, "simulate", PR, "-j", "1", "--out", "d", "--set", "workload.num_prompts=8")
    assert r.returncode == 0, r.stderr
    for first, second, kind in (("d", "d", "folder"), ("d", "./d/", "folder"),
                                ("d/fresh.json", "./d/fresh.json", "file")):
        r = _mtpsim(tmp_path, "compare", first, second)
        assert r.returncode == 2, (first, second, r.stdout, r.stderr)
        assert r.stderr.splitlines() == [
            f"error: inputs: argument 2 ({second}): expected another run than argument 1 ({first}), "
            f"got the same {kind}: compare would read it once; give each run's {kind} once"], r.stderr
    inside = _mtpsim(tmp_path, "compare", "d", "d/fresh.json")
    assert inside.returncode == 0, inside.stderr
