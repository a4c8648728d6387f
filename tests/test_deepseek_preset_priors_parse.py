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
            "critical_step_exponent", "critical_lk_exponent"} <= set(priors)
    for name, text in priors.items():
        assert parse_prior(text, PARAMS[name]).kind != "fixed", name


def test_an_experiment_on_the_preset_draws_them_and_the_exponents_only_where_they_act():
    preset = read_toml(PRESET, "preset")["uncertainty"]["priors"]
    exponents = {"critical_step_exponent", "critical_lk_exponent"}
    exp = load_experiment(PR, ["acceptance.penalty=kappa_lk"])  # both exponents act
    drawn = drawn_priors(exp)
    for name in preset:
        assert drawn[name] == parse_prior(preset[name], PARAMS[name]), name
    values = [with_draw(exp, d).acceptance for d in plan(exp, 16)]
    for name in exponents:
        prior = drawn[name]
        got = [getattr(a, name) for a in values]
        assert all(prior.a <= v <= prior.b for v in got) and len(set(got)) == 16, name
    one_kappa = drawn_priors(load_experiment(PR, ["acceptance.penalty=kappa"]))
    assert not exponents & set(one_kappa)  # they would not act: not drawn
    per_step = drawn_priors(load_experiment(PR, ["acceptance.penalty=kappa_step"]))
    assert "critical_step_exponent" in per_step and "critical_lk_exponent" not in per_step
    # the spec's default form since v20's penalty comparison (docs/uncertainty.md §33)
    assert load_experiment(PR).acceptance.penalty == "kappa_step"
    assert set(drawn_priors(load_experiment(PR))) == set(per_step)


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
