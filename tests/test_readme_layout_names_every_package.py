"""The README's layout block names every package under mtpsim/ and every top-level folder of
the repository, so a newcomer's map is not missing a room (models/ once was)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layout() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```text\n(.*?)```", section, re.S).group(1)


def test_every_mtpsim_package_is_in_the_layout():
    layout = _layout()
    packages = sorted(p.parent.name for p in (ROOT / "mtpsim").glob("*/__init__.py"))
    assert len(packages) > 10
    missing = [p for p in packages if f"{p}/" not in layout]
    assert not missing, missing


def _tracked_folders() -> set[str]:
    """Top-level folders git tracks (a checkout's own runs/, venvs and build output are not the
    repository's); without git, the folders on disk that are not outputs."""
    try:
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                               check=True, timeout=60).stdout.split()
        return {f.split("/", 1)[0] for f in files if "/" in f}
    except (OSError, subprocess.SubprocessError):
        return {p.name for p in ROOT.iterdir() if p.is_dir() and p.name not in ("runs", "build", "dist")
                and not p.name.endswith(".egg-info")}


def test_every_top_level_folder_is_in_the_layout():
    layout = _layout()
    folders = sorted(f for f in _tracked_folders() if not f.startswith((".", "_")))
    missing = [f for f in folders if f"{f}/" not in layout]
    assert not missing, missing
