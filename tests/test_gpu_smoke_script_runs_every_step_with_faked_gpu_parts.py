"""scripts/gpu-smoke.sh run here with the GPU parts faked by commands on PATH (uv, nvidia-smi,
the venv's Python, nvcc): every step is logged under $OUT in order with the exact packages and
arguments, CUDA_HOME points at the venv's nvcc, the real `mtpsim doctor --smoke --json` writes
its JSON; the reference engine runs at its first context before the vLLM parts and at the others
only when their expected time fits; a part that runs long is cut at the budget and the rest are
skipped with a reason, so the whole run ends inside its budget; without CUDA the GPU parts are
skipped cleanly; a node that cannot reach the package index installs nothing and skips the vLLM
parts at once (the first lent H200 had no network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs the script and real doctor processes

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu-smoke.sh"

FAKE_UV = """#!/bin/bash
echo "uv $*" >> "$FAKE_LOG"
if [ "$1" = venv ]; then
    dir="${@: -1}"
    mkdir -p "$dir/bin"
    cp "$FAKE_PYTHON_SRC" "$dir/bin/python"
    chmod +x "$dir/bin/python"
elif [ "$1 $2" = "pip install" ]; then
    py="$4"
    home="$(dirname "$(dirname "$py")")/lib/python3.12/site-packages/nvidia/cu13"
    mkdir -p "$home/bin"
    cp "$FAKE_NVCC_SRC" "$home/bin/nvcc"
    chmod +x "$home/bin/nvcc"
    sleep "${FAKE_INSTALL_S:-0}"
elif [ "$1 $2" = "pip freeze" ]; then
    echo "vllm==0.33.0"
fi
"""

FAKE_NVCC = """#!/bin/bash
echo "nvcc $*" >> "$FAKE_LOG"
if [ "$1" = --version ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi
while [ $# -gt 0 ]; do if [ "$1" = -o ]; then echo cubin > "$2"; fi; shift; done
"""

FAKE_SMI = """#!/bin/bash
echo "nvidia-smi $*" >> "$FAKE_LOG"
echo "NVIDIA H200, 580.65.06, 143771 MiB, 9.0"
"""

# The venv's Python: the probe and the GPU runs are faked; doctor runs for real.
FAKE_PYTHON = """#!/bin/bash
if [ "$1" = -c ]; then  # the script's one probe through the venv: is vLLM installed?
    echo "venv-python -c (vllm probe)" >> "$FAKE_LOG"
    [ "${FAKE_VLLM:-1}" = 1 ]; exit $?
fi
echo "python CUDA_HOME=${CUDA_HOME:-} $*" >> "$FAKE_LOG"
if [ "$(basename "$1")" = toolchain-probe.py ]; then
    echo '{"cuda_available": true}' > "$2/toolchain.json"
    [ "${FAKE_CUDA:-1}" = 1 ]; exit $?
fi
if [ "$1 $2 $3" = "-m mtpsim doctor" ]; then
    exec "$REAL_PYTHON" "$@"
fi
out="${@: -1}"
mkdir -p "$out"
echo "started" > "$out/started.txt"
sleep "${FAKE_RUN_S:-0}"
echo '{"ok": true}' > "$out/result.json"
"""


# The node's own Python for the offline venv: `-m venv --system-site-packages DIR` makes DIR with
# the faked venv Python; anything else (the index probe, the reference estimate) is the real one.
FAKE_BASE_PYTHON = """#!/bin/bash
if [ "$1 $2" = "-m venv" ]; then
    echo "base-python $*" >> "$FAKE_LOG"
    dir="${@: -1}"
    mkdir -p "$dir/bin"
    cp "$FAKE_PYTHON_SRC" "$dir/bin/python"
    chmod +x "$dir/bin/python"
    exit 0
fi
exec "$REAL_PYTHON" "$@"
"""


def _fakes(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name, text in (("uv", FAKE_UV), ("nvidia-smi", FAKE_SMI)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (tmp / "python.src").write_text(FAKE_PYTHON)
    (bin_dir / "base-python").write_text(FAKE_BASE_PYTHON)
    (bin_dir / "base-python").chmod(0o755)
    (tmp / "nvcc.src").write_text(FAKE_NVCC)
    path = [str(bin_dir)] + [d for d in os.environ["PATH"].split(os.pathsep)
                             if not (Path(d) / "nvcc").exists()]  # no real nvcc: only the venv's
    return {**os.environ, "PATH": os.pathsep.join(path), "OUT": str(tmp / "out"),
            "GPU_SMOKE_VENV": str(tmp / "venv"), "FAKE_LOG": str(tmp / "calls.log"),
            "FAKE_PYTHON_SRC": str(tmp / "python.src"), "FAKE_NVCC_SRC": str(tmp / "nvcc.src"),
            "REAL_PYTHON": sys.executable, "PYTHONPATH": str(ROOT), "CUDA_HOME": "",
            "GPU_SMOKE_CONTEXTS": "8192 32768", "GPU_SMOKE_PYTHON": str(bin_dir / "base-python"),
            "GPU_SMOKE_INDEX_URL": "http://127.0.0.1:9/simple/"}  # refused: never the network


def _run(env: dict[str, str], **extra: str) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    res = subprocess.run(["bash", str(SCRIPT)], env={**env, **extra}, capture_output=True,
                         text=True, timeout=300, check=False, cwd=ROOT)
    return res, time.monotonic() - t0


def _summary(out: Path) -> dict[str, str]:
    rows = (line.split(None, 1) for line in (out / "summary.txt").read_text().splitlines())
    return {r[0]: r[1] for r in rows}


def test_every_step_runs_in_order_and_is_logged_under_out(tmp_path):
    env = _fakes(tmp_path)
    res, _ = _run(env, GPU_SMOKE_BUDGET_S="200", GPU_SMOKE_INSTALL="1")
    out = tmp_path / "out"
    summary = _summary(out)
    assert list(summary) == ["facts", "venv", "install", "toolchain", "doctor", "reference-8192",
                             "smoke-share", "smoke-fresh", "reference-32768"], summary
    assert summary["doctor"] == "FAIL (exit 1)"  # the real doctor on this GPU-less machine
    assert all(summary[p] == "OK" for p in ("facts", "venv", "install", "toolchain", "smoke-share",
                                            "smoke-fresh", "reference-8192", "reference-32768"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "NVIDIA H200, 580.65.06" in (out / "facts.txt").read_text()
    doctor = json.loads((out / "doctor.out").read_text())
    assert doctor["mode"] == "smoke" and doctor["ok"] is False
    calls = (tmp_path / "calls.log").read_text().splitlines()
    venv = tmp_path / "venv"
    install = next(c for c in calls if c.startswith("uv pip install"))
    assert install == (f"uv pip install --python {venv}/bin/python vllm==0.33.0 "
                       f"cuda-toolkit[nvcc,cccl]==13.0.3 -e {ROOT}")
    home = venv / "lib" / "python3.12" / "site-packages" / "nvidia" / "cu13"
    runs = [c for c in calls if c.startswith("python ")]
    assert all(f"CUDA_HOME={home} " in c for c in runs)  # DeepGEMM's JIT finds the venv's nvcc
    smoke = [c for c in runs if "run-real" in c]
    assert [c.split("policies=")[1].split()[0] for c in smoke] == ['["share"]', '["fresh"]']
    assert all("experiments/smoke-h200.toml --engine vllm --smoke" in c for c in smoke)
    refs = [c for c in runs if "smoke_reference" in c]
    assert ["--device cuda --contexts 8192 --topk 2048" in refs[0],
            "--device cuda --contexts 32768 --topk 2048" in refs[1]] == [True, True]
    assert (out / "smoke-share" / "result.json").is_file()
    assert "nvcc_sm90a_cubin" in (out / "toolchain-probe.py").read_text()
    assert (out / "reference-8192" / "result.json").is_file()
    log = (out / "gpu-smoke.log").read_text()
    for step in summary:
        if step != "facts":
            assert f"START {step}" in log and f"{'FAIL' if step == 'doctor' else 'OK'} {step}" in log


def test_a_long_part_is_cut_at_the_budget_and_the_rest_skipped_with_a_reason(tmp_path):
    env = _fakes(tmp_path)
    res, wall = _run(env, GPU_SMOKE_BUDGET_S="75", FAKE_RUN_S="400")
    out = tmp_path / "out"
    assert wall < 75, wall
    summary = _summary(out)
    for policy in ("share", "fresh"):  # each needs 90 s plus its 50 s stop grace
        assert summary[f"smoke-{policy}"].startswith("SKIP (") and \
            "s left of the 75s budget, it needs 90s plus a 50s stop grace" in summary[f"smoke-{policy}"]
    assert summary["reference-8192"].startswith("TIMEOUT after")  # the first context runs first
    assert (out / "reference-8192" / "started.txt").is_file()  # a cut part keeps what it wrote
    assert summary["reference-32768"].startswith("SKIP (")
    assert res.returncode == 1
    log = (out / "gpu-smoke.log").read_text()
    assert "TIMEOUT reference-8192" in log and "SKIP smoke-fresh" in log and "done in" in log


def test_without_cuda_the_gpu_parts_are_skipped_cleanly(tmp_path):
    env = _fakes(tmp_path)
    res, _ = _run(env, GPU_SMOKE_BUDGET_S="200", FAKE_CUDA="0", GPU_SMOKE_INSTALL="0")
    summary = _summary(tmp_path / "out")
    assert summary["install"] == "SKIP (GPU_SMOKE_INSTALL=0: the venv is used as it is)"
    assert "uv pip install" not in (tmp_path / "calls.log").read_text()
    assert summary["toolchain"] == "FAIL (exit 1)"
    for part in ("smoke-share", "smoke-fresh", "reference-8192", "reference-32768"):
        assert summary[part].startswith("SKIP (torch sees no CUDA device"), summary
    assert "Traceback" not in res.stdout and res.returncode == 1
    assert not (tmp_path / "out" / "smoke-share").exists()


def test_an_offline_node_installs_nothing_and_skips_the_vllm_parts_at_once(tmp_path):
    """No answer from the package index (a refused 127.0.0.1 port here): the venv is made from
    the node's Python with its site packages, nothing is installed, this checkout goes on
    PYTHONPATH, the reference engine still runs, and the vLLM parts are skipped with why."""
    env = _fakes(tmp_path)
    res, wall = _run(env, GPU_SMOKE_BUDGET_S="200", FAKE_VLLM="0")
    out = tmp_path / "out"
    summary = _summary(out)
    calls = (tmp_path / "calls.log").read_text()
    assert "uv venv" not in calls and "uv pip install" not in calls
    assert f"base-python -m venv --system-site-packages {tmp_path / 'venv'}" in calls
    assert summary["install"].startswith("SKIP (offline: no answer from http://127.0.0.1:9/simple/")
    for policy in ("share", "fresh"):
        assert summary[f"smoke-{policy}"].startswith("SKIP (vLLM is not installed in "), summary
    assert summary["reference-8192"] == "OK" and summary["reference-32768"] == "OK"
    assert "run-real" not in calls and res.returncode == 1 and wall < 60


def test_a_further_context_is_skipped_when_its_expected_time_does_not_fit(tmp_path):
    """The 8K reference run takes ~6 s here; 64K is 8x longer, so expected at 6 x 8^1.5 ~ 136 s,
    more than the ~60 s left: skipped with the estimate, before it starts."""
    env = _fakes(tmp_path)
    res, wall = _run(env, GPU_SMOKE_BUDGET_S="100", FAKE_RUN_S="6", FAKE_VLLM="0",
                     GPU_SMOKE_CONTEXTS="8192 65536")
    summary = _summary(tmp_path / "out")
    assert summary["reference-8192"] == "OK"
    assert summary["reference-65536"].startswith("SKIP (") and "it needs 1" in summary["reference-65536"]
    assert not (tmp_path / "out" / "reference-65536").exists() and wall < 100
