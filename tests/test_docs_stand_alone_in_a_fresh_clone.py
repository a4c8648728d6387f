"""The README and docs stand alone: in a fresh clone every relative link resolves, nothing points
outside the repository, and every command in a ```bash block parses with mtpsim's command line
(its experiment and `--set` overrides validated) or names a script that exists with the options
it declares. `scripts/check_docs.py` does the checking; CI runs it here on a fresh clone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from check_docs import problems  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def test_this_checkout_has_no_broken_link_or_command():
    assert problems(ROOT) == []


def test_the_checker_finds_each_kind_of_problem(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "pr.toml").write_text((ROOT / "experiments" / "pr47352.toml").read_text())
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "b.py").write_text(
        "import argparse\nap = argparse.ArgumentParser()\nap.add_argument('--rounds', type=int)\n")
    (tmp_path / "README.md").write_text(
        "See [the docs](docs/missing.md), [ok](experiments/pr.toml) and `../shared/DESIGN.md`;\n"
        "data in `experiments/absent.json`.\n\n"
        "```bash\n"
        "mtpsim simulate experiments/pr.toml --sett x=1\n"
        "mtpsim simulate experiments/pr.toml --set workload.no_such_field=3\n"
        "mtpsim simulate experiments/pr.toml --seed 0 --set workload.num_prompts=8  # fine\n"
        "mtpsim compare experiments/nothing-here\n"
        "python benchmarks/b.py --rounds 2 --round 3\n"
        "bash scripts/absent.sh && mtpsim frobnicate\n"
        "```\n")
    found = problems(tmp_path)
    text = "\n".join(found)
    assert "link docs/missing.md does not resolve" in text
    assert "points outside the repository (../shared)" in text
    assert "`experiments/absent.json` is not in the repository" in text
    assert "No such option" in text and "--sett" in text
    assert "workload.no_such_field" in text
    assert "experiments/nothing-here is not in the repository" in text
    assert "has no option --round" in text
    assert "scripts/absent.sh is not in the repository" in text
    assert "mtpsim has no command frobnicate" in text
    assert len(found) == 9, text  # the fine command is not among them


def test_a_fresh_clone_passes_the_checks(tmp_path):
    """What a new user gets: a clone of the committed tree (uncommitted edits are not in it)."""
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout: nothing to clone")
    clone = tmp_path / "clone"
    for cmd in (["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(clone)],
                ["git", "-C", str(clone), "fetch", "--quiet", str(ROOT), "HEAD"],
                ["git", "-C", str(clone), "checkout", "--quiet", "FETCH_HEAD"]):
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(clone)}
    res = subprocess.run([sys.executable, str(clone / "scripts" / "check_docs.py"), str(clone)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert " 0 problems" in res.stdout
