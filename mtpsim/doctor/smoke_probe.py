"""What `mtpsim doctor --smoke` reads from a one-GPU node, without importing torch or vLLM
where a file or a small tool answers (a CPU machine answers in seconds): the driver through
`libcuda`, GPUs through `nvidia-smi`, nvcc as DeepGEMM finds it, the host compiler, free disk.
Only DeepGEMM's import needs vLLM's wheel loaded, and it runs in a bounded child process."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from mtpsim.dataclass import dataclass
from mtpsim.doctor.probe import Gpu, Probe

TOOL_TIMEOUT_S = 20.0
DEEPGEMM_TIMEOUT_S = 180.0
# DeepGEMM's JIT picks nvcc from $DG_JIT_NVCC_COMPILER, else <CUDA home>/bin/nvcc with the CUDA
# home from $CUDA_HOME, $CUDA_PATH, `which nvcc`'s parent, /usr/local/cuda (strings of
# vllm/third_party/deep_gemm/_C_extension.abi3.so in the vLLM 0.33.0 wheel).
NVCC_ENV = "DG_JIT_NVCC_COMPILER"
CUDA_HOME_ENVS = ("CUDA_HOME", "CUDA_PATH")
DEFAULT_CUDA_HOME = Path("/usr/local/cuda")
# How DeepGEMM is imported, in vllm/utils/deep_gemm.py `_import_deep_gemm`: an installed
# `deep_gemm` first, then the copy vendored in the wheel. Fixed code, no user input.
DEEPGEMM_CODE = """
import importlib, sys
errors = []
for name in ("deep_gemm", "vllm.third_party.deep_gemm"):
    try:
        importlib.import_module(name)
    except Exception as e:
        errors.append(f"{name}: {type(e).__name__}: {e}")
    else:
        print("OK " + name)
        sys.exit(0)
print("FAIL " + " | ".join(errors))
sys.exit(1)
"""


@dataclass(frozen=True, slots=True)
class Tool:
    path: str | None  # None: not found
    version: str | None  # parsed version, None: did not answer
    how: str  # where it was found (or why not)


@dataclass(frozen=True, slots=True)
class Driver:
    cuda: tuple[int, int] | None  # the newest CUDA the driver supports; None: no driver
    version: str | None  # e.g. "580.65.06" (nvidia-smi), None: unknown
    error: str = ""


def _run(argv: list[str], timeout_s: float = TOOL_TIMEOUT_S) -> tuple[int, str]:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, f"{type(e).__name__}: {e}"
    return res.returncode, res.stdout + res.stderr


class SmokeProbe(Probe):
    """The real one-GPU node (tests fake this class)."""

    def driver(self) -> Driver:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            return Driver(None, None, f"libcuda.so.1 does not load ({e})")
        v = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(v)) != 0:
            return Driver(None, None, "cuDriverGetVersion failed")
        code, out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        version = out.strip().splitlines()[0].strip() if code == 0 and out.strip() else None
        return Driver((v.value // 1000, v.value % 1000 // 10), version)

    def smi_gpus(self) -> list[Gpu] | None:
        """GPUs as nvidia-smi lists them; None if nvidia-smi does not answer."""
        if shutil.which("nvidia-smi") is None:
            return None
        code, out = _run(["nvidia-smi", "--query-gpu=name,memory.total,compute_cap",
                          "--format=csv,noheader,nounits"])
        if code != 0:
            return None
        gpus = []
        for line in out.strip().splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 3 and re.fullmatch(r"\d+\.\d+", parts[2]):
                major, minor = parts[2].split(".")
                gpus.append(Gpu(parts[0], float(parts[1]) / 1024, (int(major), int(minor))))
        return gpus

    def torch_cuda_build(self) -> tuple[str | None, str | None]:
        """(torch version, the CUDA it was built for) read from torch/version.py, no import."""
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.origin is None:
            return None, None
        text = (Path(spec.origin).parent / "version.py").read_text(encoding="utf-8")
        ver = re.search(r"^__version__\s*=\s*'([^']*)'", text, re.M)
        cuda = re.search(r"^cuda\s*(?::[^=]*)?=\s*'([^']*)'", text, re.M)
        return (ver[1] if ver else None), (cuda[1] if cuda else None)

    def nvcc(self) -> Tool:
        """nvcc where DeepGEMM's JIT will look for it, and its release."""
        env = os.environ
        if env.get(NVCC_ENV):
            path, how = env[NVCC_ENV], f"${NVCC_ENV}"
        else:
            home, how = None, ""
            for name in CUDA_HOME_ENVS:
                if env.get(name):
                    home, how = Path(env[name]), f"${name}={env[name]}"
                    break
            if home is None and (which := shutil.which("nvcc")):
                home, how = Path(which).parent.parent, "`which nvcc`"
            if home is None:
                home, how = DEFAULT_CUDA_HOME, str(DEFAULT_CUDA_HOME)
            path = str(home / "bin" / "nvcc")
        if not os.access(path, os.X_OK):
            return Tool(None, None, f"{path} (from {how}) is not an executable")
        code, out = _run([path, "--version"])
        m = re.search(r"release (\d+\.\d+)", out)
        return Tool(path, m[1] if code == 0 and m else None, how)

    def host_compiler(self) -> Tool:
        """The C++ compiler nvcc calls (`c++` unless -ccbin; DeepGEMM passes none)."""
        for name in ("c++", "g++", "clang++"):
            if path := shutil.which(name):
                code, out = _run([path, "--version"])
                first = out.strip().splitlines()[0] if code == 0 and out.strip() else None
                return Tool(path, first, name)
        return Tool(None, None, "none of c++, g++, clang++ on PATH")

    def vllm_file(self, relative: str) -> Path | None:
        """A file of the installed vLLM wheel, found without importing vLLM."""
        spec = importlib.util.find_spec("vllm")
        if spec is None or spec.origin is None:
            return None
        path = Path(spec.origin).parent / relative
        return path if path.exists() else None

    def deepgemm_import(self) -> tuple[bool, str]:
        """Import DeepGEMM as vLLM does, in a child process (a broken .so cannot take the
        doctor down, and a slow import is bounded)."""
        code, out = _run([sys.executable, "-c", DEEPGEMM_CODE], DEEPGEMM_TIMEOUT_S)
        lines = [line for line in out.splitlines() if line.startswith(("OK ", "FAIL "))]
        detail = lines[-1] if lines else (out.strip().splitlines() or ["no output"])[-1]
        return code == 0, detail.removeprefix("OK ").removeprefix("FAIL ")

    def disk_free_gib(self, path: Path) -> float:
        return shutil.disk_usage(path).free / 2**30
