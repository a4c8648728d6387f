"""`mtpsim doctor --smoke`: can this one-GPU node run `run-real --smoke`
(experiments/smoke-h200.toml)? The checks the 4-GPU experiment checklist lacks, each judged
from `SmokeProbe` facts, each FAIL with its fix:

- driver: vLLM 0.33.0's x86 wheel links `libcudart.so.13` and pins a CUDA-13.0 torch; a driver
  that supports less than the torch build's CUDA (older than R580 for 13.0) is "too old", which
  torch alone reports as "no CUDA device".
- nvcc: the sparse-attention indexer needs DeepGEMM (vllm/model_executor/layers/
  sparse_attn_indexer.py, `SparseAttnIndexer.__init__`: "requires DeepGEMM support"), whose JIT
  compiles kernels at run time and refuses NVCC older than 12.9 (vllm/utils/deep_gemm.py loads
  it; the message is in the vendored `_C_extension.abi3.so`). The wheel ships DeepGEMM, not nvcc.
- host compiler: nvcc needs a host C++ compiler.
- deepgemm: imported as vllm/utils/deep_gemm.py `_import_deep_gemm` does; its extension links
  libtorch_cuda.so and libcudart.so.13, so a CPU-only torch cannot load it.
- gpu: compute capability 9.0 or 10.x/12.x (vllm/platforms/cuda.py `support_deep_gemm`).
- disk: room for the venv (the CUDA torch and vLLM: ~9 GB) and the JIT caches.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mtpsim.doctor import checks as base
from mtpsim.doctor.checks import FAIL, OK, Check, Context
from mtpsim.doctor.smoke_probe import SmokeProbe
from mtpsim.vllm_plugin.contract import SUPPORTED_VLLM

WHEEL_CUDA = (13, 0)  # vLLM 0.33.0's x86 wheel (libcudart.so.13, torch 2.14.0 + CUDA 13.0)
MIN_NVCC = (12, 9)  # DeepGEMM's JIT: "NVCC version must be at least 12.9"
MIN_DISK_GIB = 25.0
# The first driver branch that supports each CUDA major.minor (NVIDIA's CUDA release notes).
DRIVER_FOR_CUDA = {(12, 8): "R570", (12, 9): "R575", (13, 0): "R580"}
NVCC_FIX = ("pip install 'cuda-toolkit[nvcc,cccl]==13.0.3' into the venv and export "
            "CUDA_HOME=<the folder whose bin/nvcc it installed> (scripts/gpu-smoke.sh does both)")


def _ver(text: str | None) -> tuple[int, int] | None:
    try:
        major, minor = (text or "").split("+")[0].split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def _cuda_needed(p: SmokeProbe) -> tuple[tuple[int, int], str]:
    version, cuda = p.torch_cuda_build()
    if (need := _ver(cuda)) is not None:
        return need, f"torch {version} is built for CUDA {cuda}"
    return WHEEL_CUDA, f"vLLM {SUPPORTED_VLLM}'s wheel is built for CUDA 13.0"


def driver(c: Context) -> Check:
    p: SmokeProbe = c.probe  # type: ignore[assignment]
    need, why = _cuda_needed(p)
    branch = DRIVER_FOR_CUDA.get(need, f"one supporting CUDA {need[0]}.{need[1]}")
    d = p.driver()
    if d.cuda is None:
        return Check("driver", FAIL, f"no NVIDIA driver: {d.error}",
                     f"run on a GPU node with an NVIDIA driver {branch} or newer ({why})")
    have = f"driver {d.version or '?'} supports CUDA {d.cuda[0]}.{d.cuda[1]}"
    if d.cuda < need:
        return Check("driver", FAIL, f"driver too old: {have}; {why}",
                     f"update the NVIDIA driver to {branch} or newer")
    return Check("driver", OK, f"{have}; {why}")


def torch_build(c: Context) -> Check:
    p: SmokeProbe = c.probe  # type: ignore[assignment]
    version, cuda = p.torch_cuda_build()
    if version is None:
        return Check("torch", FAIL, "torch is not installed",
                     f"pip install vllm=={SUPPORTED_VLLM} (it brings its CUDA torch)")
    if cuda is None:
        return Check("torch", FAIL, f"torch {version} is a CPU-only build",
                     f"a fresh venv with `pip install vllm=={SUPPORTED_VLLM}` (its CUDA torch); "
                     "scripts/gpu-smoke.sh makes one")
    return Check("torch", OK, f"torch {version}, built for CUDA {cuda}")


def gpu(c: Context) -> Check:
    p: SmokeProbe = c.probe  # type: ignore[assignment]
    found = p.smi_gpus()
    if found is None:
        return Check("gpu", FAIL, "nvidia-smi does not answer: no GPU or no driver",
                     "run on a node with one Hopper or Blackwell GPU and its driver")
    visible = p.env("CUDA_VISIBLE_DEVICES")
    if not found or visible in ("", "-1"):
        extra = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        return Check("gpu", FAIL, f"{len(found)} GPU(s) usable{extra}",
                     "unset CUDA_VISIBLE_DEVICES or name a GPU in it")
    g = found[0]
    cc = f"{g.capability[0]}.{g.capability[1]}"
    what = f"{g.name}, compute capability {cc}, {g.memory_gib:.0f} GiB"
    if not (g.capability == (9, 0) or g.capability[0] in (10, 12)):
        return Check("gpu", FAIL, f"{what}: DeepGEMM (the DSA indexer) runs on 9.0 (Hopper) or "
                     "10.x/12.x (Blackwell) only", "use an H100/H200 or a Blackwell GPU")
    return Check("gpu", OK, what + (f" (+{len(found) - 1} more; the smoke uses one)"
                                    if len(found) > 1 else ""))


def nvcc(c: Context) -> Check:
    p: SmokeProbe = c.probe  # type: ignore[assignment]
    t = p.nvcc()
    if t.path is None:
        return Check("nvcc", FAIL, f"no nvcc where DeepGEMM's JIT looks: {t.how}", NVCC_FIX)
    if (v := _ver(t.version)) is None:
        return Check("nvcc", FAIL, f"{t.path} (from {t.how}) gives no release number",
                     NVCC_FIX)
    if v < MIN_NVCC:
        return Check("nvcc", FAIL, f"nvcc {t.version} at {t.path} (from {t.how}); DeepGEMM's "
                     "JIT needs 12.9 or newer", NVCC_FIX)
    return Check("nvcc", OK, f"nvcc {t.version} at {t.path} (from {t.how})")


def host_compiler(c: Context) -> Check:
    p: SmokeProbe = c.probe  # type: ignore[assignment]
    t = p.host_compiler()
    if t.path is None or t.version is None:
        return Check("host-cc", FAIL, f"no host C++ compiler for nvcc ({t.how})",
                     "apt-get install -y g++ (or put a C++ compiler on PATH)")
    return Check("host-cc", OK, f"{t.version} ({t.path})")


def vllm_version(c: Context) -> Check:
    v = c.probe.package_version("vllm")
    if v != SUPPORTED_VLLM:
        return Check("vllm", FAIL, f"vLLM {v or 'not installed'}; the plugin supports "
                     f"{SUPPORTED_VLLM}", f"pip install vllm=={SUPPORTED_VLLM}")
    return Check("vllm", OK, f"vLLM {v}")


def deepgemm(c: Context) -> Check:
    p: SmokeProbe = c.probe  # type: ignore[assignment]
    if p.package_version("vllm") is None:
        return Check("deepgemm", FAIL, "vLLM is not installed (it ships DeepGEMM)",
                     f"pip install vllm=={SUPPORTED_VLLM}")
    if p.torch_cuda_build()[1] is None:
        return Check("deepgemm", FAIL, "DeepGEMM's extension (vllm/third_party/deep_gemm) links "
                     "libtorch_cuda.so and libcudart.so.13: a CPU-only torch cannot load it",
                     "fix the torch line first (vLLM's CUDA torch)")
    ok, detail = p.deepgemm_import()
    if not ok:
        return Check("deepgemm", FAIL, f"DeepGEMM does not import: {detail}",
                     f"reinstall vllm=={SUPPORTED_VLLM} with its torch; check "
                     "`python -c 'import vllm.third_party.deep_gemm'`")
    return Check("deepgemm", OK, f"imports ({detail}); the DSA indexer needs it")


def disk(c: Context) -> Check:
    p: SmokeProbe = c.probe  # type: ignore[assignment]
    here = Path.cwd()
    free = p.disk_free_gib(here)
    if free < MIN_DISK_GIB:
        return Check("disk", FAIL, f"{free:.0f} GiB free at {here}; the venv (CUDA torch, vLLM) "
                     f"and the JIT caches need about {MIN_DISK_GIB:.0f}",
                     "free space there, or run from a larger disk")
    return Check("disk", OK, f"{free:.0f} GiB free at {here}")


def plugin(c: Context) -> Check:
    out = base.plugin(c)
    return out if out.status != "SKIP" else Check("plugin", FAIL, "vLLM is not installed",
                                                  "pip install -e . after vLLM")


SMOKE_CHECKS: tuple[Callable[[Context], Check], ...] = (
    base.python, driver, torch_build, gpu, nvcc, host_compiler, vllm_version, deepgemm,
    plugin, disk)


def run_smoke_checks(probe: SmokeProbe | None = None) -> list[Check]:
    """Every smoke line, in order; a check that raises is reported as its own FAIL."""
    return base.run_checks(Context(probe or SmokeProbe(), "vllm", None), SMOKE_CHECKS)


__all__ = ["SMOKE_CHECKS", "run_smoke_checks"]
