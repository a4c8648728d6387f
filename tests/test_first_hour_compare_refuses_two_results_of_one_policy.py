"""`mtpsim compare` pairs policies within a mode (sim, real) and sim against real, one result per
policy and mode. Given two results of one policy in one mode (two simulate --out folders of
other seeds or settings), it used to keep the last silently and compare it: now one line names
both files (exit 2). The same file named twice is still read once."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PR = "experiments/pr47352.toml"


def _mtpsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtpsim", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_two_sim_results_of_one_policy_are_named(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out, seed in ((a, "0"), (b, "1")):
        r = _mtpsim("simulate", PR, "-j", "1", "--seed", seed, "--out", str(out),
                    "--set", "workload.num_prompts=8")
        assert r.returncode == 0, r.stderr
    r = _mtpsim("compare", str(a), str(b))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.splitlines() == [
        f"error: {b / 'fresh.json'}: expected one sim result per policy, but {a / 'fresh.json'} is "
        "sim fresh too: compare pairs policies within a mode and sim against real; compare those "
        "runs one at a time"], r.stderr
    same = _mtpsim("compare", str(a), str(a / "fresh.json"))
    assert same.returncode == 0, same.stderr
