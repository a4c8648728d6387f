"""A calibration records the machine-speed probe of the runs it was fitted on; a prediction for a
machine with another probe figure (`calibration.probe_s`) has its fitted step costs rescaled by
the ratio, and the machine flag follows the probe, not the CPU model string."""

from __future__ import annotations

import dataclasses

import pytest

from mtpsim.calibration.schema import read_calibration
from mtpsim.calibration.traces import probe_figures
from mtpsim.models.build import probe_scale, sim_models
from mtpsim.models.cost import StepShape
from mtpsim.spec import load_experiment
from mtpsim.trace import Trace
from mtpsim.trace_records import TraceMeta
from mtpsim.uncertainty.domain import Domain, extrapolation

EXP = "experiments/heldout/k2-conc4.toml"


def _probe(wall: float) -> dict:
    return {"version": 1, "wall_s": wall, "cpu_s": wall / 2}


def test_probe_figures_average_every_reading_of_the_traces():
    trs = [Trace("reference", "fresh", 2, 64, meta=TraceMeta(probe=[_probe(0.4), _probe(0.6)])),
           Trace("reference", "share", 2, 64, meta=TraceMeta(probe=[_probe(0.5)])),
           Trace("reference", "share", 2, 64)]
    fig = probe_figures(trs)
    assert fig["probe_wall_s"] == pytest.approx(0.5) and fig["probe_cpu_s"] == pytest.approx(0.25)
    assert fig["probe_readings"] == 3 and fig["probe_wall_rel_sd"] == pytest.approx(0.2)
    assert probe_figures([Trace("reference", "fresh", 2, 64)]) == {}


def _cal_with_probe(wall: float):
    cal = read_calibration("experiments/heldout/calibration.json")
    return dataclasses.replace(cal, machine={**cal.machine, "probe_wall_s": wall})


def test_a_slower_probe_scales_every_fitted_phase():
    cal = _cal_with_probe(0.5)
    base = load_experiment(EXP)
    slow = load_experiment(EXP, ["calibration.probe_s=0.8"])
    assert probe_scale(base, cal) == 1.0 and probe_scale(slow, cal) == pytest.approx(1.6)
    shape = StepShape(num_decode=4, decode_ctx=3600.0, decode_keys=256.0, num_draft=4, draft_ctx=3600.0,
                      draft_keys=256.0)
    a = sim_models(base, "fresh", cal).cost.step(shape)
    b = sim_models(slow, "fresh", cal).cost.step(shape)
    total_a, total_b = sum(float(v.sum()) for v in a.values()), sum(float(v.sum()) for v in b.values())
    assert total_b == pytest.approx(1.6 * total_a)


def test_the_machine_flag_follows_the_probe_not_the_cpu_string():
    dom = Domain("cal", {}, {"cpu": "Some Other CPU", "threads": 1, "probe_wall_s": 0.5})
    same_speed = extrapolation(load_experiment(EXP, ["calibration.probe_s=0.52"]), dom)
    assert not same_speed.machine_differs
    assert any("x1.04" in n for n in same_speed.notes)
    faster = extrapolation(load_experiment(EXP, ["calibration.probe_s=0.3"]), dom)
    assert faster.machine_differs and any("x0.60" in n for n in faster.notes)


def test_a_rescaled_calibration_carries_the_measured_residual_not_the_blanket_term():
    from mtpsim.uncertainty.domain import exp_machine
    from mtpsim.uncertainty.summary import Spread

    # calibrated on this host's CPU model (read here: the test must not assume which CPU runs it)
    here = exp_machine(load_experiment(EXP))
    dom = Domain("cal", {}, {**here, "probe_wall_s": 0.5})
    for probe, differs in ((0.52, False), (0.8, True)):
        exp = load_experiment(EXP, [f"calibration.probe_s={probe}", "uncertainty.discrepancy_pct=0"])
        ext = extrapolation(exp, dom)
        assert ext.probe_rescaled and ext.machine_differs == differs
        assert Spread.of(ext, exp.uncertainty, calibrated=True).time == pytest.approx(0.12)
    plain = load_experiment(EXP, ["uncertainty.discrepancy_pct=0"])
    assert Spread.of(extrapolation(plain, dom), plain.uncertainty, calibrated=True).time == 0.0
