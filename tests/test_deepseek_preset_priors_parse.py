"""The deepseek-v3.2 preset carries the transfer table's priors (docs/simulator.md): they parse,
are drawn (the step exponent only under the per-step penalty), and an experiment's own prior wins."""

from pathlib import Path

from typer.testing import CliRunner

from mtpsim.spec.experiment import PRESETS_DIR, experiment_from_dict, load_experiment, read_toml
from mtpsim.uncertainty.draws import drawn_priors, plan, with_draw
from mtpsim.uncertainty.priors import PARAMS, parse_prior

ROOT = Path(__file__).resolve().parents[1]
PR = ROOT / "experiments" / "pr47352.toml"
PRESET = PRESETS_DIR / "models" / "deepseek-v3.2.toml"
RAW = {"model": {"preset": "deepseek-v3.2"}, "hardware": {"preset": "h200"}}


def test_every_preset_prior_parses_for_its_parameter():
    priors = read_toml(PRESET, "preset")["uncertainty"]["priors"]
    assert {"overlap_agreement", "overlap_step_exponent", "critical_entries",
            "critical_step_exponent"} <= set(priors)
    for name, text in priors.items():
        assert parse_prior(text, PARAMS[name]).kind != "fixed", name


def test_an_experiment_on_the_preset_draws_them_and_the_step_exponent_under_kappa_step():
    preset = read_toml(PRESET, "preset")["uncertainty"]["priors"]
    exp = load_experiment(PR)
    assert exp.acceptance.penalty == "kappa"  # the default form: the exponent would not act
    drawn = drawn_priors(exp)
    assert "critical_step_exponent" not in drawn
    for name in set(preset) - {"critical_step_exponent"}:
        assert drawn[name] == parse_prior(preset[name], PARAMS[name]), name
    per_step = load_experiment(PR, ["acceptance.penalty=kappa_step"])
    drawn = drawn_priors(per_step)
    prior = drawn["critical_step_exponent"]
    assert prior == parse_prior(preset["critical_step_exponent"], PARAMS["critical_step_exponent"])
    values = [with_draw(per_step, d).acceptance.critical_step_exponent for d in plan(per_step, 16)]
    assert all(prior.a <= v <= prior.b for v in values) and len(set(values)) == 16


def test_the_experiment_file_and_set_win_over_the_preset_key_by_key():
    exp = experiment_from_dict({**RAW, "uncertainty": {"priors": {"critical_entries": "loguniform(4, 8)"}}},
                               overrides=['uncertainty.priors.overlap_agreement="uniform(0.3, 0.4)"'])
    pri = exp.uncertainty.priors
    assert pri["critical_entries"] == "loguniform(4, 8)"
    assert pri["overlap_agreement"] == "uniform(0.3, 0.4)"
    assert pri["critical_step_exponent"] == read_toml(PRESET, "preset")["uncertainty"]["priors"][
        "critical_step_exponent"]  # the rest from the preset
    assert experiment_from_dict({"model": {"preset": "glm-5.2"}}).uncertainty.priors == {}


def test_a_bad_prior_over_the_preset_exits_2_naming_the_field():
    from mtpsim.cli import app

    res = CliRunner().invoke(app, ["simulate", str(PR), "--set",
                                   'uncertainty.priors.critical_step_exponent="uniform(1, 0)"'])
    assert res.exit_code == 2
    assert "uncertainty.priors" in res.output and "critical_step_exponent" in res.output
    assert "Traceback" not in res.output
