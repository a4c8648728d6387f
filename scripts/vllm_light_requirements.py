"""Print vLLM's own non-extra requirements minus the GPU-only and torch packages, one per line.

Used by install-test-deps.sh for the light vLLM route: `pip install --no-deps vllm==0.33.0`,
then these. The installed CPU torch stays (a constraints file pins it).
"""

from __future__ import annotations

import fnmatch
import importlib.metadata as md

from packaging.requirements import Requirement

EXCLUDED = ("torch*", "torchaudio", "torchvision", "torchcodec", "pynvvideocodec",
            "flashinfer-python", "apache-tvm-ffi", "tilelang", "nvidia-*", "nvtx",
            "fastsafetensors", "instanttensor", "quack-kernels", "tokenspeed-mla",
            "humming-kernels", "numba")


def light_requirements(dist: str = "vllm") -> list[str]:
    out = []
    for line in md.requires(dist) or []:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = req.name.lower().replace("_", "-")
        if any(fnmatch.fnmatch(name, pat) for pat in EXCLUDED):
            continue
        out.append(str(req))
    return out


if __name__ == "__main__":
    print("\n".join(light_requirements()))
