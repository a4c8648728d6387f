"""The SM (CU) count the GEMM model's waves use is hardware data: each GPU preset sets
`hardware.sms` (sources in docs/hardware.md), a user can override it, a bad value is one line
naming the file and field (exit 2), and the roofline reads it from the hardware, not from a table
keyed by GPU name (issue #23). Moving the counts there left every preset's step costs bit for bit:
scripts/golden_step_costs.py prices each preset against a golden file written before the move
(tests/test_family_seam_keeps_deepseek_step_costs.py runs it)."""

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from mtpsim.models import gemm_rates
from mtpsim.models.roofline import CostModel
from mtpsim.spec import available_presets, experiment_from_dict

ROOT = Path(__file__).resolve().parents[1]
GPUS = available_presets("gpus")


def _exp(gpu: str, **hw):
    return experiment_from_dict({"hardware": {"preset": gpu, **hw},
                                 "model": {"quantization": "fp8"}, "engine": {"tp": 8}})


@pytest.mark.parametrize("gpu", GPUS)
def test_every_preset_file_sets_its_sm_count_and_docs_give_its_source(gpu):
    raw = tomllib.loads((ROOT / "mtpsim/spec/presets/gpus" / f"{gpu}.toml").read_text())
    assert isinstance(raw.get("sms"), int) and raw["sms"] > 0
    assert _exp(gpu).hardware.sms == raw["sms"]
    sms_doc = (ROOT / "docs/hardware.md").read_text().split("## SMs (`sms`)")[1].split("\n## ")[0]
    assert f"| `{gpu}` | {raw['sms']} |" in sms_doc


def test_the_gemm_model_reads_the_hardwares_sm_count():
    """An override moves a wave-quantised GEMM; the same count by another route does not."""
    args = (4096, 0, 0, 58, 0)  # a prefill-sized step's GEMMs
    base = CostModel(_exp("h200"), "fresh")._gemms(*args)
    assert CostModel(_exp("h200", sms=132), "fresh")._gemms(*args) == base
    assert CostModel(_exp("h200", sms=100), "fresh")._gemms(*args) != base
    # the GPU's name no longer decides it: an H200 renamed keeps its 132 SMs
    assert CostModel(_exp("h200", name="B200"), "fresh")._gemms(*args) == base
    assert not hasattr(gemm_rates, "SMS") and not hasattr(gemm_rates, "sms_of")


def test_every_preset_is_pinned_by_the_golden_step_costs():
    spec = importlib.util.spec_from_file_location("golden_step_costs",
                                                  ROOT / "scripts/golden_step_costs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pinned = {s.split('"')[1] for sets in mod.VARIANTS.values() for s in sets
              if s.startswith("hardware.preset=")}
    assert set(GPUS) <= pinned


@pytest.mark.parametrize("value", ["0", "-3", "1.5", '"many"', "true"])
def test_a_bad_sm_count_is_one_line_naming_the_file_and_field(tmp_path, value):
    exp = tmp_path / "bad.toml"
    exp.write_text(f'[hardware]\npreset = "h200"\nsms = {value}\n')
    r = subprocess.run([sys.executable, "-m", "mtpsim", "simulate", str(exp)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "hardware.sms" in r.stderr and "bad.toml" in r.stderr
