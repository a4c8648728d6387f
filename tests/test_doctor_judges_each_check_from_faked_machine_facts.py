"""Each `mtpsim doctor` check, fed machine facts faked at the boundary (the `Probe`): a healthy
4 x B200 node with vLLM 0.33.0 passes every line; each broken fact fails exactly its line,
with the fix."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mtpsim.doctor import Check, Context, run_checks
from mtpsim.doctor.probe import Gpu, Probe, TorchInfo
from mtpsim.spec import load_experiment

B200 = Gpu("NVIDIA B200", 179.0, (10, 0))
H200 = Gpu("NVIDIA H200", 139.8, (9, 0))


class FakeProbe(Probe):
    """A healthy GPU node; tests change one fact."""

    def __init__(self, tmp: Path) -> None:
        self.python = (3, 12, 3)
        self.versions = {"vllm": "0.33.0", "triton": "3.6.0", "ray": None}
        self.torch_info = TorchInfo("2.14.0+cu130", "13.0", True)
        self.gpu_list = [B200] * 4
        self.spec_problem: str | None = None
        self.has_triton: bool | None = True
        self.eps = {"mtpsim": "mtpsim.vllm_plugin:register"}
        self.environ: dict[str, str] = {}
        self.env_names = {"VLLM_USE_V2_MODEL_RUNNER", "VLLM_PLUGINS"}
        self.files: dict[Path, dict | None] = {}
        self.dirs: set[Path] = set()
        self.cache: dict[str, Path] = {}
        self.taken_ports: set[int] = set()
        self.reachable: set[tuple[str, int]] = set()
        self.import_errors: dict[str, str] = {}
        self.absent: set[str] = set()  # modules not installed (every other one is)
        self.extra: dict[str, object] = {}

    def python_version(self):
        return self.python

    def package_version(self, dist):
        return self.versions.get(dist)

    def requires_python(self, dist):
        return ">=3.10,<3.14" if self.versions.get(dist) else None

    def importable(self, module):
        return self.import_errors.get(module)

    def missing(self, module):
        return module in self.absent

    def torch(self):
        return self.torch_info

    def gpus(self):
        return self.gpu_list

    def speculator_problem(self):
        return self.spec_problem

    def vllm_has_triton(self):
        return self.has_triton

    def plugin_entry_points(self):
        return self.eps

    def vllm_env_names(self):
        return self.env_names

    def env(self, name):
        return self.environ.get(name)

    def read_json(self, path):
        return self.files.get(path)

    def is_dir(self, path):
        return path in self.dirs

    def is_file(self, path):
        return path in self.files

    def hub_cached_file(self, repo, filename):
        return self.cache.get(f"{repo}/{filename}")

    def port_free(self, port):
        return port not in self.taken_ports

    def tcp_reachable(self, host, port, timeout_s=2.0):
        return (host, port) in self.reachable

    def extra_args_set(self, extra_args, dest):
        return self.extra.get(dest)


DSV32 = {"model_type": "deepseek_v32", "index_topk": 2048, "num_nextn_predict_layers": 1}
SPEED = Path("/data/speed")


@pytest.fixture
def probe(tmp_path):
    p = FakeProbe(tmp_path)
    cfg = Path("/hf/cache/config.json")
    p.cache["nvidia/DeepSeek-V3.2-NVFP4/config.json"] = cfg
    p.files[cfg] = dict(DSV32)
    p.files[SPEED / "throughput_16k.jsonl"] = None
    return p


def _exp(*sets: str):
    return load_experiment("experiments/pr47352.toml",
                           [f"workload.dataset_path={SPEED}", *sets])


def _by_name(probe, exp=None, engine="vllm") -> dict[str, Check]:
    exp = _exp() if exp is None else exp
    return {c.name: c for c in run_checks(Context(probe, engine, exp))}


def test_a_healthy_node_passes_every_line(probe):
    checks = _by_name(probe)
    assert list(checks) == ["python", "torch", "gpus", "vllm", "packages", "triton", "plugin",
                            "model-runner", "model", "dataset", "ports", "ray"]
    assert {n: c.status for n, c in checks.items() if c.status not in ("OK", "SKIP")} == {}
    assert checks["ray"].status == "SKIP"
    assert "index_topk 2048, no index_share_for_mtp_iteration" in checks["model"].detail
    assert "tp=4" in checks["gpus"].detail


def _one_fail(probe, name, exp=None, engine="vllm") -> Check:
    checks = _by_name(probe, exp, engine)
    bad = {n for n, c in checks.items() if c.status == "FAIL"}
    assert bad == {name}, {n: checks[n].detail for n in bad}
    assert checks[name].fix
    return checks[name]


def test_python_outside_vllms_range_fails(probe):
    probe.python = (3, 9, 18)
    assert "vLLM needs >=3.10,<3.14" in _one_fail(probe, "python").detail


@pytest.mark.parametrize(("info", "words"), [
    (TorchInfo("2.13.0+cpu", None, False), "CPU-only build"),
    (TorchInfo("2.14.0", "13.0", False), "sees no CUDA device"),
    (TorchInfo(None, None, False, "ImportError: x"), "does not import"),
])
def test_torch_without_cuda_fails_for_vllm(probe, info, words):
    probe.torch_info = info
    checks = _by_name(probe)
    assert checks["torch"].status == "FAIL" and words in checks["torch"].detail


def test_torch_without_cuda_is_fine_for_the_reference_engine(probe):
    probe.torch_info = TorchInfo("2.13.0+cpu", None, False)
    probe.gpu_list = []
    checks = _by_name(probe, engine="reference")
    assert checks["torch"].status == "OK" and checks["gpus"].status == "SKIP"


def test_fewer_gpus_than_tp_fails(probe):
    probe.gpu_list = [B200] * 2
    assert "2 CUDA GPU(s) visible, the experiment needs 4" in _one_fail(probe, "gpus").detail


def test_nvfp4_on_hopper_fails(probe):
    probe.gpu_list = [H200] * 4
    assert "NVFP4 weights need Blackwell" in _one_fail(probe, "gpus").detail


def test_the_simulators_memory_check_decides_whether_the_batch_fits(probe):
    probe.gpu_list = [dataclasses.replace(B200, memory_gib=80.0)] * 4
    detail = _one_fail(probe, "gpus").detail
    assert "the simulator's memory check fails" in detail and "80 GiB each" in detail


@pytest.mark.parametrize(("version", "status"), [(None, "FAIL"), ("0.34.0", "FAIL")])
def test_a_missing_or_other_vllm_fails(probe, version, status):
    probe.versions["vllm"] = version
    assert _by_name(probe)["vllm"].status == status


def test_a_changed_speculator_shape_fails(probe):
    probe.spec_problem = "MTPSpeculator.on_prefill_end(self, num_reqs, num_tokens) should be ..."
    assert "on_prefill_end" in _one_fail(probe, "vllm").detail


def test_vllm_without_an_active_triton_fails(probe):
    probe.has_triton = False
    assert "no active Triton driver" in _one_fail(probe, "triton").detail


def test_an_unregistered_plugin_fails(probe):
    probe.eps = {"other": "x:y"}
    assert "found: other -> x:y" in _one_fail(probe, "plugin").detail


def test_vllm_plugins_that_leave_mtpsim_out_fail(probe):
    probe.environ["VLLM_PLUGINS"] = "lora_resolver"
    assert "does not list mtpsim" in _one_fail(probe, "plugin").detail


def test_the_spec_turning_model_runner_v2_off_fails(probe):
    exp = _exp('vllm.env={"VLLM_USE_V2_MODEL_RUNNER" = "0"}')
    assert "VLLM_USE_V2_MODEL_RUNNER='0'" in _one_fail(probe, "model-runner", exp).detail


def test_a_vllm_without_the_model_runner_switch_fails(probe):
    probe.env_names = set()
    assert "does not read VLLM_USE_V2_MODEL_RUNNER" in _one_fail(probe, "model-runner").detail


def test_a_model_missing_from_the_cache_warns_and_fails_offline(probe):
    probe.cache.clear()
    assert _by_name(probe)["model"].status == "WARN"
    probe.environ["HF_HUB_OFFLINE"] = "1"
    assert "HF_HUB_OFFLINE" in _one_fail(probe, "model").detail


def test_a_local_model_reports_its_sharing_field(probe):
    folder = Path("/models/glm")
    probe.dirs.add(folder)
    probe.files[folder / "config.json"] = {**DSV32, "model_type": "glm_moe_dsa",
                                           "index_share_for_mtp_iteration": True}
    checks = _by_name(probe, _exp(f"model.name={folder}", "model.quantization=fp8"))
    assert checks["model"].status == "OK"
    assert "glm_moe_dsa, index_topk 2048, index_share_for_mtp_iteration = True" in \
        checks["model"].detail


def test_a_model_without_dsa_or_mtp_fails(probe):
    probe.files[Path("/hf/cache/config.json")] = {"model_type": "llama"}
    assert "without a DSA indexer" in _one_fail(probe, "model").detail


def test_an_empty_model_name_fails(probe):
    assert "model.name is empty" in _one_fail(probe, "model", _exp("model.name=")).detail


def test_a_missing_dataset_fails(probe):
    del probe.files[SPEED / "throughput_16k.jsonl"]
    assert "throughput_16k.jsonl not found" in _one_fail(probe, "dataset").detail
    assert "dataset_path is empty" in _one_fail(
        probe, "dataset", _exp("workload.dataset_path=")).detail


def test_a_taken_port_fails(probe):
    probe.taken_ports.add(8000)
    assert "127.0.0.1:8000 (vllm.port) is taken" in _one_fail(
        probe, "ports", _exp("vllm.port=8000")).detail


def test_a_named_ray_cluster_needs_ray_and_an_answering_head(probe):
    probe.environ["RAY_ADDRESS"] = "10.0.0.5:6379"
    assert "ray is not installed" in _one_fail(probe, "ray").detail
    probe.versions["ray"] = "2.50.0"
    assert "does not answer" in _one_fail(probe, "ray").detail
    probe.reachable.add(("10.0.0.5", 6379))
    assert _by_name(probe)["ray"].status == "OK"


def test_the_ray_backend_in_extra_args_is_read_through_vllms_parser(probe):
    probe.extra["distributed_executor_backend"] = "ray"
    assert "ray is not installed" in _one_fail(probe, "ray").detail


def test_a_check_that_breaks_is_a_fail_line_not_a_traceback(probe):
    def boom():
        raise RuntimeError("driver exploded")

    probe.gpus = boom
    c = _by_name(probe)["gpus"]
    assert c.status == "FAIL" and "RuntimeError: driver exploded" in c.detail


def test_without_an_experiment_the_experiment_checks_are_skipped(probe):
    checks = {c.name: c for c in run_checks(Context(probe, "vllm", None))}
    assert checks["model"].status == checks["dataset"].status == "SKIP"
    assert checks["gpus"].status == "OK"


def test_the_command_prints_json_and_exits_by_the_worst_status(probe, monkeypatch):
    import json

    from typer.testing import CliRunner

    import mtpsim.doctor as doctor_pkg
    from mtpsim.cli import app

    monkeypatch.setattr(doctor_pkg, "Probe", lambda: probe)
    args = ["doctor", "experiments/pr47352.toml", "--set", f"workload.dataset_path={SPEED}"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["ok"] is True
    probe.gpu_list = []
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 1
    out = json.loads(res.output)
    assert [c["name"] for c in out["checks"] if c["status"] == "FAIL"] == ["gpus"]


def test_sglang_is_checked_and_its_model_and_dataset_as_for_vllm(probe):
    """`doctor --engine sglang` never looked for SGLang, and judged the model and dataset as the
    reference engine's (OK 'reference weights', OK 'held-out text'), whatever the spec said."""
    probe.import_errors["vllm"] = "vLLM is not needed: never imported"
    checks = _by_name(probe, engine="sglang")
    assert checks["packages"].status == "OK" and "sglang" in checks["packages"].detail
    assert "nvidia/DeepSeek-V3.2-NVFP4" in checks["model"].detail
    assert checks["dataset"].detail == str(SPEED / "throughput_16k.jsonl")
    probe.absent.add("sglang")
    c = _one_fail(probe, "packages", engine="sglang")
    assert c.detail == "sglang is not installed (--engine sglang needs the 'sglang' extra)"
    assert "docs.sglang.io" in c.fix
    probe.absent.clear()
    probe.import_errors["sglang"] = "ImportError: libcudart.so.13: cannot open shared object file"
    assert "sglang does not import: ImportError: libcudart" in _one_fail(
        probe, "packages", engine="sglang").detail
    del probe.import_errors["sglang"]
    assert "workload.dataset_path is empty" in _one_fail(
        probe, "dataset", _exp("workload.dataset_path=''"), engine="sglang").detail
    probe.cache.clear()
    assert _by_name(probe, engine="sglang")["model"].detail.endswith(
        "not in the local Hugging Face cache; the server would download it first")


def test_a_missing_extra_of_the_engine_fails_its_line(probe):
    probe.absent.add("aiohttp")
    c = _one_fail(probe, "packages")
    assert c.detail == "aiohttp is not installed (--engine vllm needs the 'serve' extra)"
    assert c.fix == "pip install -e '.[serve]'"
    probe.absent = {"vllm"}  # the vllm line judges vLLM itself
    assert _by_name(probe)["packages"].status == "OK"
