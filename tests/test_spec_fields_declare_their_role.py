"""Every spec field declares its role where it is defined, and `--set` overrides that change the
measured setup are read from those declarations (issue #22 item 3)."""

from dataclasses import dataclass, fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app
from mtpsim.spec.experiment import SECTIONS, TOP_LEVEL, Experiment
from mtpsim.spec.fields import ROLES, option, role_of
from mtpsim.spec.roles import key_role, setup_overrides

ALL_KEYS = [*TOP_LEVEL, *(f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in fields(cls))]
# The hand list the declarations replace (mtpsim/spec/roles.py before issue #22).
OLD_NEUTRAL = ("seed", "policies", "acceptance.", "calibration.", "description", "reference.", "vllm.")


def test_every_declared_field_has_a_role():
    for section, cls in SECTIONS.items():
        assert getattr(cls, "ROLE", None) in ROLES, section
        for f in fields(cls):
            assert role_of(cls, f.name) in ROLES, f"{section}.{f.name}"
    assert {k: role_of(Experiment, k) for k in TOP_LEVEL} == {
        "description": "label", "seed": "bookkeeping", "policies": "bookkeeping"}


def test_a_field_of_a_section_without_a_role_is_refused():
    @dataclass(frozen=True)
    class Bare:
        x: int = option(1, "a field")
        y: int = option(1, "a field", role="model")

    with pytest.raises(ValueError, match="declares no role"):
        role_of(Bare, "x")
    assert role_of(Bare, "y") == "model"
    with pytest.raises(ValueError, match="not one of"):
        option(1, "a field", role="neutral")


def test_setup_overrides_keep_only_what_changes_the_measured_setup():
    sets = ["workload.input_len=4096", " engine.tp = 8", "speculative.num_speculative_tokens=2",
            "acceptance.critical_entries=4", "acceptance.per_position=[0.9]",
            "calibration.measured.fresh.output_throughput=300", "uncertainty.mc_se_target=0.2",
            "uncertainty.max_draws=64", "seed=3", "policies=['fresh']", "vllm.port=8000",
            "reference.threads=2", "workload.rounds=4", "engine.kv_cache_dtype=fp8",
            "calibration.host_us_per_request=30"]
    assert setup_overrides(sets) == ["workload.input_len=4096", " engine.tp = 8",
                                     "speculative.num_speculative_tokens=2", "workload.rounds=4",
                                     "engine.kv_cache_dtype=fp8"]


def test_keys_the_spec_does_not_declare_count_as_setup():
    # loading the spec refuses them; until then they must not pass as harmless
    assert setup_overrides(["bogus.x=1", "workload.nope=1", "seeds=2"]) == [
        "bogus.x=1", "workload.nope=1", "seeds=2"]


def test_a_whole_section_override_takes_the_setup_role_if_any_field_has_it():
    assert key_role("workload") == "setup"
    assert key_role("acceptance") == "model"
    assert key_role("uncertainty") == "prior"


def test_the_declarations_agree_with_the_old_list_except_the_uncertainty_section():
    # The old list missed [uncertainty] (added after it); uncertainty/run.py filtered it out
    # by hand. Every other field keeps its old classification.
    differ = {k for k in ALL_KEYS if (key_role(k) == "setup") == k.startswith(OLD_NEUTRAL)}
    assert differ == {k for k in ALL_KEYS if k.startswith("uncertainty.")}
    assert all(key_role(k) != "setup" for k in differ)


SMALL = """
seed = 1
policies = ["fresh", "share"]
[engine]
tp = 8
max_num_seqs = 8
[workload]
num_prompts = 12
input_len = 3000
output_len = 100
max_concurrency = 4
[calibration]
fit = ["mem_efficiency"]
[calibration.measured.fresh]
output_throughput = 300.0
median_tpot_ms = 12.0
"""


def test_calibrate_write_accepts_a_prior_override_and_refuses_a_setup_one(tmp_path: Path):
    p = tmp_path / "exp.toml"
    p.write_text(SMALL)
    res = CliRunner().invoke(app, ["calibrate", str(p), "--write", "--set", "engine.kv_cache_dtype=fp8"])
    assert res.exit_code == 2 and "engine.kv_cache_dtype=fp8" in res.output, res.output
    res = CliRunner().invoke(app, ["calibrate", str(p), "--write", "--set",
                                   "uncertainty.mc_se_target=0.2"])
    assert res.exit_code == 0, res.output
    assert "mem_efficiency = " in p.read_text()  # the fitted factor was written


def test_docs_spec_names_each_sections_role():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "spec.md").read_text(encoding="utf-8")
    for section, cls in SECTIONS.items():
        assert f"**[{section}]** ({cls.ROLE}) — " in doc, section
    exceptions = [f"{s}.{f.name}" for s, cls in SECTIONS.items() for f in fields(cls)
                  if f.metadata.get("role") not in (None, cls.ROLE)]
    assert exceptions and all(f"`{k}`" in doc for k in exceptions), exceptions


def test_simulate_hides_measured_rows_after_a_setup_override_only(tmp_path: Path):
    p = tmp_path / "exp.toml"
    p.write_text(SMALL)
    res = CliRunner().invoke(app, ["simulate", str(p), "--set", "uncertainty.interval=0.8"])
    assert res.exit_code == 0 and "measured rows not shown" not in res.output, res.output
    res = CliRunner().invoke(app, ["simulate", str(p), "--set", "workload.output_len=50"])
    assert res.exit_code == 0, res.output
    assert "measured rows not shown: --set changed the measured setup (workload.output_len=50)" \
        in " ".join(res.output.split()), res.output
