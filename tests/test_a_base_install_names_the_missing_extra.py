"""After `pip install -e .` alone, every command that needs an optional extra ends, before any
work, with one line naming the extra and its install command, exit code 2: never a traceback.

The install is a real venv (no system site-packages) holding only mtpsim's base dependencies,
linked from this interpreter's site-packages (no download), and the checkout on its path, as
`pip install -e .` would put it. A control run checks the venv works (`simulate` exits 0) and
that it really lacks the extras (importing torch fails there)."""

from __future__ import annotations

import os
import re
import subprocess
import venv
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
BASE = ["numpy", "scipy", "typer", "rich"]  # pyproject.toml's [project] dependencies


def _closure(names: list[str]) -> set[str]:
    """The base distributions and everything they require (extras' requirements left out)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = re.split(r"[<>=!~;\[ ]", todo.pop())[0].strip().lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for req in metadata.distribution(name).requires or []:
            marker = req.partition(";")[2]
            if "extra" in marker or "python_version < " in marker or "win32" in marker:
                continue
            todo.append(req)
    return seen


def _link(dist_name: str, site: Path) -> None:
    dist = metadata.distribution(dist_name)
    base = Path(dist.locate_file(""))
    tops = {Path(f).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
    for top in tops:
        target = site / top
        if (base / top).exists() and not target.exists():
            target.symlink_to(base / top)


@pytest.fixture(scope="module")
def base_python(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("base-venv")
    venv.EnvBuilder(with_pip=False, system_site_packages=False, symlinks=True).create(root)
    py = root / "bin" / "python"
    site = Path(subprocess.check_output([py, "-c", "import site; print(site.getsitepackages()[0])"],
                                        text=True).strip())
    for name in _closure(BASE):
        _link(name, site)
    (site / "mtpsim-checkout.pth").write_text(f"{ROOT}\n")  # what `pip install -e .` adds
    return py


def _mtpsim(py: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([py, "-m", "mtpsim", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_venv_is_a_working_base_install(base_python, tmp_path):
    probe = subprocess.run([base_python, "-c", "import torch"], capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'torch'" in probe.stderr
    for extra in ("matplotlib", "fastapi", "ray", "vllm", "safetensors"):
        assert subprocess.run([base_python, "-c", f"import {extra}"], capture_output=True).returncode
    ok = _mtpsim(base_python, "simulate", "experiments/pr47352.toml", "--set",
                 "workload.num_prompts=4", "--json")
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("args, extra, install", [
    (["run-real", "experiments/reference-cpu.toml", "--out", "{tmp}/rr"], "reference", ".[reference]"),
    (["run-real", "experiments/reference-cpu.toml", "--server", "--out", "{tmp}/rs"], "reference",
     ".[reference]"),
    (["run-real", "experiments/reference-cpu.toml", "--engine", "vllm", "--out", "{tmp}/rv"], "vllm",
     "docs/real-mode.md"),
    (["serve-reference"], "reference", ".[reference]"),
    (["simulate", "experiments/pr47352.toml", "--plot", "{tmp}/p"], "plots", ".[plots]"),
    (["advise", "experiments/advise-deepseek-v3.2-b200.toml", "--plot", "{tmp}/a"], "plots",
     ".[plots]"),
    (["sweep", "experiments/pr47352.toml", "--set", "engine.max_num_seqs=8,16", "--plot", "{tmp}/s"],
     "plots", ".[plots]"),
    (["sweep", "experiments/pr47352.toml", "--set", "engine.max_num_seqs=8,16", "--cluster", "auto"],
     "ray", ".[ray]"),
    (["sweep", "experiments/reference-cpu.toml", "--engine", "reference", "--set",
      "speculative.index_topk=32,64", "--out", "{tmp}/sw"], "reference", ".[reference]"),
])
def test_each_command_names_its_missing_extra_before_any_work(base_python, tmp_path, args, extra,
                                                              install):
    p = _mtpsim(base_python, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert p.returncode == 2, p.stderr
    assert p.stdout == ""  # nothing ran first (no table, then a traceback)
    assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
    assert f"'{extra}' extra" in p.stderr and install in p.stderr, p.stderr
    assert not any(tmp_path.iterdir())  # no output folder made either
