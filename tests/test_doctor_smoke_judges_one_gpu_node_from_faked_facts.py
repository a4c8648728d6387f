"""`mtpsim doctor --smoke`, each check fed faked one-GPU-node facts: a healthy H200 node with
a CUDA-13 driver, nvcc 13.0 and g++ passes every line; each broken fact fails its own line with
its fix (an old driver reads "driver too old", not "no CUDA device"). The probe's nvcc lookup
follows DeepGEMM's order, checked with fake nvcc executables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mtpsim.doctor.probe import Gpu
from mtpsim.doctor.smoke import SMOKE_CHECKS, run_smoke_checks
from mtpsim.doctor.smoke_probe import Driver, SmokeProbe, Tool

H200 = Gpu("NVIDIA H200", 139.8, (9, 0))


class FakeSmokeProbe(SmokeProbe):
    def __init__(self) -> None:
        self.drv = Driver((13, 0), "580.65.06")
        self.torch_build = ("2.14.0+cu130", "13.0")
        self.gpu_list: list[Gpu] | None = [H200]
        self.nvcc_tool = Tool("/venv/nvidia/cu13/bin/nvcc", "13.0", "$CUDA_HOME=/venv/nvidia/cu13")
        self.cxx = Tool("/usr/bin/c++", "c++ (Debian 12.2.0) 12.2.0", "c++")
        self.versions = {"vllm": "0.33.0"}
        self.dg = (True, "vllm.third_party.deep_gemm")
        self.free = 200.0
        self.environ: dict[str, str] = {}
        self.eps = {"mtpsim": "mtpsim.vllm_plugin:register"}

    def python_version(self):
        return (3, 12, 3)

    def requires_python(self, dist):
        return ">=3.11,<3.15"

    def package_version(self, dist):
        return self.versions.get(dist)

    def driver(self):
        return self.drv

    def torch_cuda_build(self):
        return self.torch_build

    def smi_gpus(self):
        return self.gpu_list

    def nvcc(self):
        return self.nvcc_tool

    def host_compiler(self):
        return self.cxx

    def deepgemm_import(self):
        return self.dg

    def disk_free_gib(self, path):
        return self.free

    def env(self, name):
        return self.environ.get(name)

    def plugin_entry_points(self):
        return self.eps

    def importable(self, module):
        return None


def _by_name(probe):
    return {c.name: c for c in run_smoke_checks(probe)}


def test_a_healthy_h200_node_passes_every_line():
    checks = run_smoke_checks(FakeSmokeProbe())
    assert len(checks) == len(SMOKE_CHECKS)
    assert [c.status for c in checks] == ["OK"] * len(SMOKE_CHECKS), checks
    assert {c.name for c in checks} == {"python", "driver", "torch", "gpu", "nvcc", "host-cc",
                                        "vllm", "deepgemm", "plugin", "disk"}


def _break(what: str) -> FakeSmokeProbe:
    p = FakeSmokeProbe()
    if what == "old driver":
        p.drv = Driver((12, 8), "570.133.20")
    elif what == "no driver":
        p.drv = Driver(None, None, "libcuda.so.1 does not load")
    elif what == "cpu torch":
        p.torch_build = ("2.13.0+cpu", None)
    elif what == "no gpu":
        p.gpu_list = None
    elif what == "hidden gpu":
        p.environ["CUDA_VISIBLE_DEVICES"] = ""
    elif what == "ampere":
        p.gpu_list = [Gpu("NVIDIA A100-SXM4-80GB", 80.0, (8, 0))]
    elif what == "old nvcc":
        p.nvcc_tool = Tool("/usr/local/cuda/bin/nvcc", "12.8", "/usr/local/cuda")
    elif what == "no nvcc":
        p.nvcc_tool = Tool(None, None, "/usr/local/cuda/bin/nvcc (from /usr/local/cuda) is not "
                           "an executable")
    elif what == "no c++":
        p.cxx = Tool(None, None, "none of c++, g++, clang++ on PATH")
    elif what == "old vllm":
        p.versions["vllm"] = "0.32.0"
    elif what == "deepgemm":
        p.dg = (False, "deep_gemm: ModuleNotFoundError | vllm.third_party.deep_gemm: OSError")
    elif what == "disk":
        p.free = 4.0
    elif what == "no plugin":
        p.eps = {}
    return p


@pytest.mark.parametrize(("what", "line", "says", "fix"), [
    ("old driver", "driver", "driver too old: driver 570.133.20 supports CUDA 12.8; torch "
     "2.14.0+cu130 is built for CUDA 13.0", "R580 or newer"),
    ("no driver", "driver", "no NVIDIA driver", "R580"),
    ("cpu torch", "torch", "CPU-only build", "gpu-smoke.sh"),
    ("no gpu", "gpu", "nvidia-smi does not answer", "Hopper or Blackwell"),
    ("hidden gpu", "gpu", "CUDA_VISIBLE_DEVICES=''", "unset CUDA_VISIBLE_DEVICES"),
    ("ampere", "gpu", "compute capability 8.0", "H100/H200"),
    ("old nvcc", "nvcc", "nvcc 12.8", "cuda-toolkit[nvcc,cccl]==13.0.3"),
    ("no nvcc", "nvcc", "no nvcc where DeepGEMM's JIT looks", "CUDA_HOME"),
    ("no c++", "host-cc", "no host C++ compiler", "g++"),
    ("old vllm", "vllm", "vLLM 0.32.0", "vllm==0.33.0"),
    ("deepgemm", "deepgemm", "does not import: deep_gemm: ModuleNotFoundError", "reinstall"),
    ("disk", "disk", "4 GiB free", "free space"),
    ("no plugin", "plugin", "has no mtpsim", "pip install -e ."),
])
def test_each_broken_fact_fails_its_own_line_with_its_fix(what, line, says, fix):
    checks = _by_name(_break(what))
    bad = {n for n, c in checks.items() if c.status == "FAIL"}
    if what == "cpu torch":  # DeepGEMM's extension links libtorch_cuda: it says so, no import
        assert bad == {"torch", "deepgemm"}
        assert "CPU-only torch cannot load it" in checks["deepgemm"].detail
    elif what == "old driver":  # a CPU-only torch would judge the driver against the wheel
        assert bad == {"driver"}
    else:
        assert bad == {line}, checks
    assert says in checks[line].detail
    assert fix in checks[line].fix


def test_the_driver_is_judged_against_the_wheel_when_torch_is_cpu_only():
    p = _break("cpu torch")
    p.drv = Driver((12, 4), "550.54")
    c = _by_name(p)["driver"]
    assert c.status == "FAIL" and "vLLM 0.33.0's wheel is built for CUDA 13.0" in c.detail


def _fake_nvcc(folder: Path, release: str) -> Path:
    (folder / "bin").mkdir(parents=True)
    exe = folder / "bin" / "nvcc"
    exe.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n")
    exe.chmod(0o755)
    return exe


def test_nvcc_is_found_as_deepgemm_finds_it(tmp_path, monkeypatch):
    home, other = tmp_path / "cu13", tmp_path / "cu12"
    _fake_nvcc(home, "13.0")
    old = _fake_nvcc(other, "12.8")
    for name in ("DG_JIT_NVCC_COMPILER", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", f"{other / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert SmokeProbe().nvcc().version == "12.8"  # `which nvcc`'s CUDA home
    monkeypatch.setenv("CUDA_HOME", str(home))
    t = SmokeProbe().nvcc()
    assert (t.path, t.version, t.how) == (str(home / "bin" / "nvcc"), "13.0",
                                          f"$CUDA_HOME={home}")
    monkeypatch.setenv("DG_JIT_NVCC_COMPILER", str(old))
    assert SmokeProbe().nvcc().version == "12.8"
    monkeypatch.setenv("DG_JIT_NVCC_COMPILER", str(tmp_path / "missing"))
    assert SmokeProbe().nvcc().path is None
