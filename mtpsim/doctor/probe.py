"""What `mtpsim doctor` reads from the machine: every call that touches the environment
(imports, devices, files, sockets) lives here, so tests fake this class and nothing else."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from mtpsim.dataclass import dataclass
from mtpsim.serve_reference.server import HOST


@dataclass(frozen=True, slots=True)
class TorchInfo:
    version: str | None  # None: not importable
    cuda_build: str | None  # torch.version.cuda (None: a CPU-only build)
    cuda_available: bool
    error: str = ""


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    memory_gib: float
    capability: tuple[int, int]


class Probe:
    """The real machine. Each method answers one question and never raises for a missing
    package or device: it returns None / an empty value with the reason where useful."""

    def python_version(self) -> tuple[int, int, int]:
        return sys.version_info[:3]

    def package_version(self, dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    def requires_python(self, dist: str) -> str | None:
        try:
            return importlib.metadata.metadata(dist).get("Requires-Python")
        except importlib.metadata.PackageNotFoundError:
            return None

    def missing(self, module: str) -> bool:
        """True if `module` is not installed (found without importing it)."""
        from mtpsim.extras import missing

        return missing(module)

    def importable(self, module: str) -> str | None:
        """None if `module` imports, else the error."""
        try:
            importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - any import failure is the answer
            return f"{type(e).__name__}: {e}"
        return None

    def torch(self) -> TorchInfo:
        try:
            import torch
        except Exception as e:  # noqa: BLE001
            return TorchInfo(None, None, False, f"{type(e).__name__}: {e}")
        return TorchInfo(torch.__version__, torch.version.cuda, bool(torch.cuda.is_available()))

    def gpus(self) -> list[Gpu]:
        try:
            import torch

            if not torch.cuda.is_available():
                return []
            out = []
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                out.append(Gpu(p.name, p.total_memory / 2**30, (p.major, p.minor)))
            return out
        except Exception:  # noqa: BLE001 - no usable driver reads as no GPU
            return []

    def speculator_problem(self) -> str | None:
        """None if the installed vLLM's MTP speculator has the shape the plugin patches, read
        from vLLM's source (importing vLLM imports torch's compiler: tens of seconds)."""
        from mtpsim.vllm_plugin.contract import IncompatibleVllmError, check_speculator_source

        try:
            check_speculator_source(_vllm_source)
        except IncompatibleVllmError as e:
            return str(e)
        return None

    def vllm_has_triton(self) -> bool | None:
        """vLLM's verdict (vllm/triton_utils/importing.py: Triton installed and exactly one
        active non-CPU driver), taken the way vLLM takes it but without importing vLLM; None if
        vLLM is not installed."""
        if _vllm_source("envs.py") is None:
            return None
        if importlib.util.find_spec("triton") is None:
            return False
        # in a child process: Triton's nanobind types print hundreds of "leaked" lines when the
        # interpreter that imported them exits, and a broken Triton may crash it
        try:
            done = subprocess.run([sys.executable, "-c", _TRITON_DRIVERS], capture_output=True,
                                  text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0 and done.stdout.strip() == "1"

    def plugin_entry_points(self) -> dict[str, str]:
        """name -> value of the `vllm.general_plugins` entry points vLLM would see."""
        return {ep.name: ep.value
                for ep in importlib.metadata.entry_points(group="vllm.general_plugins")}

    def vllm_env_names(self) -> set[str]:
        """The environment variables the installed vLLM reads: the keys of vllm/envs.py's
        `environment_variables` table, read from its source."""
        import ast

        text = _vllm_source("envs.py")
        for node in ast.parse(text or "").body:
            target = node.target if isinstance(node, ast.AnnAssign) else (
                node.targets[0] if isinstance(node, ast.Assign) else None)
            if (isinstance(target, ast.Name) and target.id == "environment_variables"
                    and isinstance(node.value, ast.Dict)):
                return {k.value for k in node.value.keys
                        if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        return set()

    def env(self, name: str) -> str | None:
        return os.environ.get(name)

    def read_json(self, path: Path) -> dict[str, Any] | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def is_dir(self, path: Path) -> bool:
        return path.is_dir()

    def is_file(self, path: Path) -> bool:
        return path.is_file()

    def hub_cached_file(self, repo: str, filename: str) -> Path | None:
        """`filename` of hub repo `repo` in the local Hugging Face cache (no network)."""
        try:
            from huggingface_hub import try_to_load_from_cache
        except ImportError:
            return None
        found = try_to_load_from_cache(repo, filename)
        return Path(found) if isinstance(found, str) else None

    def port_free(self, port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                return False
        return True

    def tcp_reachable(self, host: str, port: int, timeout_s: float = 2.0) -> bool:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return True
        except OSError:
            return False

    def extra_args_set(self, extra_args: tuple[str, ...], dest: str) -> Any:
        """What `extra_args` set `dest` to, asked of vLLM's own serve parser (None: unset), in a
        child process: the parser imports vLLM and so Triton, whose nanobind types print
        hundreds of "leaked" lines when the interpreter that imported them exits.
        Raises ValueError with vLLM's message if it rejects them."""
        try:
            done = subprocess.run([sys.executable, "-c", _SERVE_PARSER, dest, *extra_args],
                                  capture_output=True, text=True, timeout=300, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ValueError(f"vLLM's serve parser did not answer: {e}") from None
        try:
            answer = json.loads(done.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ValueError(f"vLLM's serve parser failed: {tail}") from None
        if "error" in answer:
            raise ValueError(answer["error"])
        return answer.get("value")


_TRITON_DRIVERS = """
from triton.backends import backends
active = [x.driver for name, x in backends.items()
          if name != "cpu" and x.driver and x.driver.is_active()]
print(len(active))
"""


_SERVE_PARSER = """
import json, sys
from mtpsim.vllm_runner.owned_flags import settings_changed
try:
    value = settings_changed(sys.argv[2:], [sys.argv[1]]).get(sys.argv[1])
    print(json.dumps({"value": value}, default=str))
except ValueError as e:
    print(json.dumps({"error": str(e)}))
"""


def _vllm_source(relative: str) -> str | None:
    """The text of vllm/<relative> as installed (found without importing vLLM), None if absent."""
    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / relative
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None
