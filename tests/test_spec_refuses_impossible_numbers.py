"""Numbers a spec may hold are finite and of a size the models can carry: `inf` only where it
means something (request_rate), no NaN, no enormous integers or exponents, no 1e-300 divisors.
Each of these once passed validation and then ate memory, hung or printed NaN tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.errors import SpecError
from mtpsim.spec import experiment_from_dict, load_experiment

EXPERIMENT = Path(__file__).parent.parent / "experiments" / "pr47352.toml"


@pytest.mark.parametrize("override, key", [
    ("calibration.overhead_ms=inf", "calibration.overhead_ms"),
    ("calibration.eager_overhead_ms=inf", "calibration.eager_overhead_ms"),
    ("hardware.kernel_floor_us=inf", "hardware.kernel_floor_us"),
    ("hardware.allreduce_latency_us=1e300", "hardware.allreduce_latency_us"),
    ("acceptance.request_sigma=inf", "acceptance.request_sigma"),
    ("acceptance.request_sigma=1e300", "acceptance.request_sigma"),
    ("acceptance.overlap_step_exponent=1e300", "acceptance.overlap_step_exponent"),
    ("hardware.hbm_tbps=1e-300", "hardware.hbm_tbps"),
    ("calibration.mem_efficiency=1e-300", "calibration.mem_efficiency"),
    ("workload.num_prompts=1000000000000", "workload.num_prompts"),
    ("workload.num_prompts=99999999999999999999999", "workload.num_prompts"),
    ("speculative.num_speculative_tokens=1000", "speculative.num_speculative_tokens"),
    ("workload.output_len=-inf", "workload.output_len"),
    ("workload.request_rate=nan", "workload.request_rate"),
    ("workload.request_rate=-inf", "workload.request_rate"),
    ("calibration.measured.fresh.output_throughput=nan", "calibration.measured"),
])
def test_impossible_numbers_are_refused_by_validation(override, key):
    with pytest.raises(SpecError) as e:
        load_experiment(EXPERIMENT, [override])
    msg = e.value.message()
    assert msg.startswith("--set: ") and key in msg and "\n" not in msg, msg


def test_inf_is_kept_where_it_means_all_at_once():
    assert experiment_from_dict({"workload": {"request_rate": float("inf")}}).workload.request_rate \
        == float("inf")


def test_nan_in_a_measured_row_of_the_file_names_the_file(tmp_path):
    exp = tmp_path / "exp.toml"
    text = EXPERIMENT.read_text().replace("output_throughput = ", "output_throughput = nan #", 1)
    exp.write_text(text)
    with pytest.raises(SpecError) as e:
        load_experiment(exp)
    assert str(exp) in e.value.message() and "finite" in e.value.message()


@pytest.mark.parametrize("override", ["calibration.overhead_ms=inf", "hardware.hbm_tbps=1e-300"])
def test_the_command_exits_2_instead_of_printing_nan(override):
    r = CliRunner().invoke(app, ["simulate", str(EXPERIMENT), "--set", override, "--json"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output  # no table at all
