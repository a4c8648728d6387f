"""GPU presets and quantizations: every shipped GPU loads and prices a step; the figures that set
the price (bandwidth, tensor rates, topology) move it the right way; an unknown GPU or
quantization is one line and exit 2."""

import subprocess
import sys
from pathlib import Path

import pytest

from mtpsim.models.roofline import CostModel
from mtpsim.spec import available_presets, experiment_from_dict

ROOT = Path(__file__).resolve().parents[1]
GPUS = available_presets("gpus")


def _exp(gpu: str, quant: str = "fp8", tp: int = 8, **hw):
    return experiment_from_dict({"hardware": {"preset": gpu, **hw},
                                 "model": {"quantization": quant}, "engine": {"tp": tp}})


@pytest.mark.parametrize("gpu", GPUS)
def test_every_preset_loads_with_a_name_and_positive_rates(gpu):
    hw = _exp(gpu).hardware
    assert hw.name and hw.memory_gib > 0 and hw.hbm_tbps > 0 and hw.fp8_tflops > hw.bf16_tflops
    assert hw.links > 0 and hw.topology in ("switch", "mesh")
    # DeepSeek-V3.2 in FP8 (~690 GB) fits 8 GPUs of every preset but the 80 GB H100, which
    # needs 16 (vLLM's DeepSeek-V3.2-Exp post: "16xH100, 8xH200, or 8xB200")
    fits = CostModel(_exp(gpu), "fresh").weight_bytes_per_gpu() < hw.memory_gib * 1e9
    assert fits == (gpu != "h100")


ARCHITECTURES = {"h100": "hopper", "h20": "hopper", "h200": "hopper", "b200": "blackwell",
                 "b300": "blackwell", "gb200": "blackwell", "gb300": "blackwell",
                 "mi300x": "cdna", "mi355x": "cdna"}


@pytest.mark.parametrize("gpu", GPUS)
def test_every_preset_names_the_architecture_whose_kernels_it_runs(gpu):
    """Kernel choices (FlashMLA's full top-k width, the CUDA-graph ceiling) follow the
    architecture: an unknown preset must be added here, with its generation."""
    assert _exp(gpu).hardware.architecture == ARCHITECTURES[gpu]


def test_the_full_top_k_width_is_priced_on_hopper_only():
    from mtpsim.models.roofline import cudagraph_max_tokens, full_width_rows
    def old_engine(gpu):  # an engine that does not pass FlashMLA topk_length
        return experiment_from_dict({"hardware": {"preset": gpu},
                                     "engine": {"tp": 8, "sparse_topk_length": False}})
    assert full_width_rows(old_engine("h200"), False)
    assert not full_width_rows(old_engine("b200"), False)
    assert not full_width_rows(old_engine("mi300x"), False)
    big = {"max_num_seqs": 1024, "max_num_batched_tokens": 8192}
    b200 = experiment_from_dict({"hardware": {"preset": "b200"}, "engine": big})
    h200 = experiment_from_dict({"hardware": {"preset": "h200"}, "engine": big})
    assert cudagraph_max_tokens(b200) == 2 * cudagraph_max_tokens(h200)


def test_docs_cite_every_preset():
    text = (ROOT / "docs" / "hardware.md").read_text()
    for gpu in GPUS:
        assert f"`{gpu}`" in text


def test_mxfp4_is_weight_only_without_mx_tensor_cores():
    """Same GPU, same weights: prefill-sized expert GEMMs are slower at the BF16 rate."""
    fast = CostModel(_exp("h200", "mxfp4", mxfp4_tflops=1979.0), "fresh")
    slow = CostModel(_exp("h200", "mxfp4"), "fresh")
    args = (4096, 0, 0, 58, 0)
    # half the tensor rate, but not twice the time: the GEMMs' streaming time (bf16 rows, 4-bit
    # weights) is shared in gemm_rates' ridge blend, so the ratio is ~1.5 here and < 1.6 even at
    # 32k tokens; 1.3 tells the BF16 rate from the MX rate
    assert slow._gemms(*args) > 1.3 * fast._gemms(*args)
    big = (32768, 0, 0, 58, 0)
    assert slow._gemms(*big) / fast._gemms(*big) > slow._gemms(*args) / fast._gemms(*args)
    # and its weights are smaller than fp8's, larger than nothing
    fp8 = CostModel(_exp("h200", "fp8"), "fresh").weight_bytes_per_gpu()
    assert 0.5 * fp8 < slow.weight_bytes_per_gpu() < fp8


def test_mxfp4_runs_at_the_mx_rate_on_mi355x_and_nvfp4_is_refused_there(capsys):
    exp = _exp("mi355x", "mxfp4")
    assert exp.hardware.mxfp4_tflops > 0 and exp.hardware.fp4_tflops == 0
    with pytest.raises(Exception, match="nvfp4 needs NVFP4 tensor cores; hardware .MI355X. has MXFP4 "
                       "ones only"):
        _exp("mi355x", "nvfp4")


def test_a_mesh_uses_only_the_links_inside_the_tp_group():
    hw = _exp("mi300x").hardware
    assert hw.group_gbps(8) == pytest.approx(896.0)
    assert hw.group_gbps(4) == pytest.approx(896.0 * 3 / 7)
    nv = _exp("h200").hardware
    assert nv.group_gbps(4) == nv.group_gbps(8) == 900.0
    # the all-reduce of a TP4 step is slower on the mesh than with the switch's full bandwidth
    mesh = CostModel(_exp("mi300x", tp=4), "fresh")
    switch = CostModel(_exp("mi300x", tp=4, topology="switch"), "fresh")
    assert mesh._allreduce(61, 64) > switch._allreduce(61, 64)


@pytest.mark.parametrize("line, field", [('preset = "h300"', "hardware.preset"),
                                         ('quantization = "int4"', "model.quantization")])
def test_unknown_gpu_or_quantization_is_one_line_and_exit_2(tmp_path, line, field):
    section = "[hardware]" if field.startswith("hardware") else "[model]"
    exp = tmp_path / "bad.toml"
    exp.write_text(f"{section}\n{line}\n")
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", str(exp)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert field in r.stderr and "bad.toml" in r.stderr
