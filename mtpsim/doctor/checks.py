"""The checklist: one function per line, each judging what the `Probe` read (torch- and
vllm-free here; the probe imports them). A check that itself breaks becomes a FAIL line."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from mtpsim.dataclass import dataclass
from mtpsim.doctor.probe import Probe
from mtpsim.errors import UserError
from mtpsim.real.backend import Capabilities, backend
from mtpsim.spec import Experiment
from mtpsim.vllm_plugin.contract import SUPPORTED_VLLM

OK, WARN, FAIL, SKIP = "OK", "WARN", "FAIL", "SKIP"
PLUGIN = ("mtpsim", "mtpsim.vllm_plugin:register")
SHARE_FIELD = "index_share_for_mtp_iteration"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str  # OK | WARN | FAIL | SKIP (not applicable here)
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class Context:
    probe: Probe
    engine: str  # an engine of mtpsim.real.ENGINES
    exp: Experiment | None

    @property
    def caps(self) -> Capabilities:
        return backend(self.engine).caps

    @property
    def vllm(self) -> bool:
        """vLLM and mtpsim's plugin in it are checked."""
        return self.caps.vllm_plugin

    @property
    def cuda_wanted(self) -> bool:
        return self.caps.gpus or (self.exp is not None and self.exp.reference.device.startswith("cuda"))


def python(c: Context) -> Check:
    v = ".".join(map(str, c.probe.python_version()))
    spec = c.probe.requires_python("vllm") if c.vllm else None
    if spec:
        from packaging.specifiers import SpecifierSet

        if v not in SpecifierSet(spec):
            return Check("python", FAIL, f"Python {v}; vLLM needs {spec}",
                         f"create the venv with a Python in {spec}")
        return Check("python", OK, f"Python {v} (vLLM needs {spec})")
    return Check("python", OK, f"Python {v}")


# The project's install routes: the GPU recipe for vLLM (its CUDA torch), the test-deps script
# for the CPU reference engine and the tests.
GPU_ROUTE = ("on a GPU node, docs/real-mode.md \"GPU recipe\": a fresh venv, pip install "
             f"vllm=={SUPPORTED_VLLM}, then pip install -e .")
CPU_ROUTE = "bash scripts/install-test-deps.sh (the CPU reference engine and the tests)"


def torch(c: Context) -> Check:
    t = c.probe.torch()
    if t.version is None:
        return Check("torch", FAIL, f"torch does not import ({t.error})",
                     GPU_ROUTE if c.vllm else CPU_ROUTE)
    if not c.cuda_wanted:
        return Check("torch", OK, f"torch {t.version} (CPU is enough for the reference engine)")
    if t.cuda_build is None:
        return Check("torch", FAIL, f"torch {t.version} is a CPU-only build", GPU_ROUTE)
    if not t.cuda_available:
        return Check("torch", FAIL, f"torch {t.version} (CUDA {t.cuda_build}) sees no CUDA device",
                     "check nvidia-smi, the driver and CUDA_VISIBLE_DEVICES")
    return Check("torch", OK, f"torch {t.version}, CUDA {t.cuda_build}")


def gpus(c: Context) -> Check:
    found = c.probe.gpus()
    need = c.exp.engine.tp if (c.exp is not None and c.caps.gpus) else 1
    if not c.cuda_wanted:
        return Check("gpus", SKIP, f"{len(found)} GPU(s); the reference engine runs on the CPU")
    if len(found) < need:
        return Check("gpus", FAIL, f"{len(found)} CUDA GPU(s) visible, the experiment needs "
                     f"{need} (engine.tp)", "run on a GPU node, or lower --set engine.tp")
    names = sorted({g.name for g in found})
    gib = min(g.memory_gib for g in found)
    what = f"{len(found)} x {'/'.join(names)}, {gib:.0f} GiB each"
    if c.exp is None:
        return Check("gpus", OK, what)
    if c.exp.model.quantization == "nvfp4" and min(g.capability for g in found) < (10, 0):
        return Check("gpus", FAIL, f"{what}: NVFP4 weights need Blackwell (compute capability "
                     "10+)", "use an FP8 checkpoint (model.name, model.quantization) on Hopper")
    from mtpsim.models.memory import check_fits
    from mtpsim.models.roofline import CostModel

    hw = dataclasses.replace(c.exp.hardware, memory_gib=gib)
    exp = dataclasses.replace(c.exp, hardware=hw)
    try:
        kv = check_fits(exp)
    except UserError as e:
        return Check("gpus", FAIL, f"{what}: the simulator's memory check fails: {e.expected}",
                     f"more GPUs (engine.tp), or shorter requests ({e.field})")
    weights = CostModel(exp, "fresh").weight_bytes_per_gpu() / 2**30
    return Check("gpus", OK, f"{what}; weights {weights:.0f} GiB per GPU at tp={exp.engine.tp} "
                 f"fit, with {kv.tokens:,} tokens of KV cache per GPU (the simulator's memory "
                 "check; a batch beyond it queues and is preempted, as in vLLM)")


def vllm(c: Context) -> Check:
    v = c.probe.package_version("vllm")
    if v is None:
        if not c.vllm:
            return Check("vllm", SKIP, f"vLLM not installed (not needed for "
                         f"{backend(c.engine).flag})")
        return Check("vllm", FAIL, "vLLM is not installed", GPU_ROUTE)
    if v != SUPPORTED_VLLM:
        return Check("vllm", FAIL if c.vllm else WARN, f"vLLM {v}; the plugin supports "
                     f"{SUPPORTED_VLLM}", GPU_ROUTE)
    if problem := c.probe.speculator_problem():
        return Check("vllm", FAIL, problem, f"reinstall vllm=={SUPPORTED_VLLM}")
    return Check("vllm", OK, f"vLLM {v}; its MTP speculator has the shape the plugin patches")


def packages(c: Context) -> Check:
    """The extras the engine needs (mtpsim.extras) are installed, and the engine's own package
    imports (the vLLM lines judge vLLM without importing it: tens of seconds)."""
    from mtpsim.extras import EXTRAS

    judged = set(c.caps.node_modules) if c.vllm else set()
    names, modules = [], []
    for extra in c.caps.extras:
        mods, install = EXTRAS[extra]
        names.append(repr(extra))
        for m in mods:
            modules.append(m)
            if m not in judged and c.probe.missing(m):
                return Check("packages", FAIL, f"{m} is not installed ({backend(c.engine).flag} "
                             f"needs the {extra!r} extra)", install)
    for m in c.caps.node_modules:
        if m not in judged and not m.startswith("mtpsim") and (err := c.probe.importable(m)):
            extra = next((e for e in c.caps.extras if m in EXTRAS[e][0]), None)
            return Check("packages", FAIL, f"{m} does not import: {err}",
                         EXTRAS[extra][1] if extra else f"reinstall {m}")
    shown = [m for m in modules if m not in judged]
    return Check("packages", OK, f"the {' and '.join(names)} extra{'s' * (len(names) > 1)}: "
                 f"{', '.join(shown)} installed" if shown else "nothing to install")


def triton(c: Context) -> Check:
    if not c.vllm:
        return Check("triton", SKIP, "needed by vLLM's Model Runner V2 only")
    fix = GPU_ROUTE + " (vLLM brings triton)"
    if (v := c.probe.package_version("triton")) is None:
        return Check("triton", FAIL, "triton is not installed; vLLM's Model Runner V2 refuses "
                     "to start without it", fix)
    if c.probe.vllm_has_triton() is False:
        return Check("triton", FAIL, f"triton {v} is installed but vLLM finds no active Triton "
                     "driver (no GPU?); Model Runner V2 refuses to start without it", fix)
    return Check("triton", OK, f"triton {v} (Model Runner V2 needs it)")


def plugin(c: Context) -> Check:
    if c.probe.package_version("vllm") is None and not c.vllm:
        return Check("plugin", SKIP, "vLLM not installed")
    eps = c.probe.plugin_entry_points()
    if eps.get(PLUGIN[0]) != PLUGIN[1]:
        return Check("plugin", FAIL, f"vLLM's vllm.general_plugins has no {PLUGIN[0]} -> "
                     f"{PLUGIN[1]} (found: {', '.join(f'{k} -> {v}' for k, v in eps.items()) or 'none'})",
                     "pip install -e . into the Python that runs vLLM")
    allowed = c.probe.env("VLLM_PLUGINS")
    if allowed is not None and PLUGIN[0] not in allowed.split(","):
        return Check("plugin", FAIL, f"VLLM_PLUGINS={allowed!r} does not list mtpsim, so vLLM "
                     "skips the plugin", "unset VLLM_PLUGINS or add mtpsim to it")
    if (err := c.probe.importable("mtpsim.vllm_plugin")) is not None:
        return Check("plugin", FAIL, f"the entry point does not import: {err}",
                     "pip install -e . again")
    return Check("plugin", OK, f"vLLM sees {PLUGIN[0]} -> {PLUGIN[1]}")


def model_runner(c: Context) -> Check:
    name = "VLLM_USE_V2_MODEL_RUNNER"
    if not c.vllm:
        return Check("model-runner", SKIP, "vLLM only")
    spec_value = c.exp.vllm.env.get(name) if c.exp is not None else None
    if spec_value is not None and spec_value != "1":
        return Check("model-runner", FAIL, f"vllm.env sets {name}={spec_value!r}: the plugin "
                     "patches Model Runner V2's MTP speculator, so nothing would be measured",
                     f"remove {name} from [vllm] env")
    if c.probe.package_version("vllm") is not None and name not in c.probe.vllm_env_names():
        return Check("model-runner", FAIL, f"the installed vLLM does not read {name}",
                     GPU_ROUTE)
    shell = c.probe.env(name)
    note = f" (the shell's {name}={shell!r} is overridden)" if shell not in (None, "1") else ""
    return Check("model-runner", OK, f"the runner starts vLLM with {name}=1{note}")


def model(c: Context) -> Check:
    if c.exp is None:
        return Check("model", SKIP, "no experiment given")
    if c.caps.own_model is not None:  # the engine runs its own model, not model.name
        return Check("model", OK, f"reference weights {c.exp.reference.weights!r}")
    name = c.exp.model.name
    if not name:
        return Check("model", FAIL, "model.name is empty", "set [model] name to a hub id or a "
                     "local folder (or use run-real --smoke, which needs no weights)")
    local = Path(name).expanduser()
    if c.probe.is_dir(local):
        cfg_path: Path | None = local / "config.json"
        where = f"local folder {local}"
    else:
        cfg_path = c.probe.hub_cached_file(name, "config.json")
        where = f"hub id {name}"
        if cfg_path is None:
            offline = c.probe.env("HF_HUB_OFFLINE") in ("1", "true", "yes")
            return Check("model", FAIL if offline else WARN, f"{where}: not in the local "
                         "Hugging Face cache" + (" and HF_HUB_OFFLINE is set" if offline else
                                                 "; the server would download it first"),
                         f"hf download {name}")
    cfg = c.probe.read_json(cfg_path) if cfg_path is not None else None
    if cfg is None:
        return Check("model", FAIL, f"{where}: no readable config.json", "download it again")
    if "index_topk" not in cfg or not cfg.get("num_nextn_predict_layers"):
        return Check("model", FAIL, f"{where}: model_type {cfg.get('model_type')!r} without a DSA "
                     "indexer (index_topk) or an MTP layer (num_nextn_predict_layers)",
                     "a DeepSeek-V3.2-style model (deepseek_v32, glm_moe_dsa)")
    share = (f"{SHARE_FIELD} = {cfg[SHARE_FIELD]}" if SHARE_FIELD in cfg
             else f"no {SHARE_FIELD} (vLLM's default: off)")
    return Check("model", OK, f"{where}: {cfg.get('model_type')}, index_topk "
                 f"{cfg['index_topk']}, {share}; the runner sets it per policy")


def dataset(c: Context) -> Check:
    if c.exp is None:
        return Check("dataset", SKIP, "no experiment given")
    w = c.exp.workload
    own = c.caps.own_model is not None  # its prompts: text shipped with its own model
    if w.dataset == "random" or own:
        return Check("dataset", OK, "held-out text shipped with the reference engine" if own
                     else "random token-id prompts (no files)")
    if not w.dataset_path:
        return Check("dataset", FAIL, "workload.dataset_path is empty (speed-bench)",
                     "--set workload.dataset_path=DIR (docs/real-mode.md: prepare.py)")
    from mtpsim.client.workload import speed_bench_path

    path = speed_bench_path(w.dataset_path, w.dataset_subset)
    if not c.probe.is_file(path):
        return Check("dataset", FAIL, f"{path} not found", "run SPEED-Bench's prepare.py "
                     "(docs/real-mode.md) and point workload.dataset_path at its folder")
    return Check("dataset", OK, f"{path}")


def ports(c: Context) -> Check:
    port = c.exp.vllm.port if c.exp is not None else 0
    if port == 0:
        return Check("ports", OK, "a free 127.0.0.1 port is picked for each server")
    if not c.probe.port_free(port):
        return Check("ports", FAIL, f"127.0.0.1:{port} (vllm.port) is taken",
                     "stop what listens there, or --set vllm.port=0")
    return Check("ports", OK, f"127.0.0.1:{port} is free")


def ray(c: Context) -> Check:
    address = c.probe.env("RAY_ADDRESS") or (c.exp.vllm.env.get("RAY_ADDRESS")
                                             if c.exp is not None else None)
    backend = None
    if c.exp is not None and c.exp.vllm.extra_args and c.vllm:
        backend = c.probe.extra_args_set(c.exp.vllm.extra_args, "distributed_executor_backend")
    if not address and backend != "ray":
        return Check("ray", SKIP, "no Ray cluster named (RAY_ADDRESS, "
                     "--distributed-executor-backend ray)")
    if (v := c.probe.package_version("ray")) is None:
        return Check("ray", FAIL, "a Ray cluster is named but ray is not installed",
                     "pip install 'ray[default]'")
    if address and address != "auto" and ":" in address.rsplit("/", 1)[-1]:
        host, port = address.rsplit("/", 1)[-1].rsplit(":", 1)
        if port.isdigit() and not c.probe.tcp_reachable(host, int(port)):
            return Check("ray", FAIL, f"ray {v}; RAY_ADDRESS={address} does not answer",
                         "start the head (ray start --head) or fix RAY_ADDRESS")
    return Check("ray", OK, f"ray {v}" + (f", RAY_ADDRESS={address}" if address else ""))


CHECKS: tuple[Callable[[Context], Check], ...] = (python, torch, gpus, vllm, packages, triton,
                                                   plugin, model_runner, model, dataset, ports, ray)


def run_checks(ctx: Context,
               checks: tuple[Callable[[Context], Check], ...] = CHECKS) -> list[Check]:
    """Every line of `checks`, in order; a check that raises is reported as its own FAIL."""
    out = []
    for fn in checks:
        try:
            out.append(fn(ctx))
        except Exception as e:  # noqa: BLE001 - the doctor reports, it never crashes
            out.append(Check(fn.__name__.replace("_", "-"), FAIL,
                             f"the check itself failed: {type(e).__name__}: {e}",
                             "report this with the line above"))
    return out
