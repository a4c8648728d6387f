"""`mtpsim simulate experiments/pr47352.toml --set description=...` dropped the shipped interval
from the headline ("no interval for these settings (--set changed the spec)"): any --set counted,
whatever the field's declared role. A --set of a field that changes nothing computed (a text: the
description, where the measured rows come from; or a runner field, which the simulator does not
read) keeps the quoted interval; one that changes the model, the priors, the seed or the setup
still drops it."""

import pytest
from typer.testing import CliRunner

from mtpsim.cli import app

EXP = "experiments/pr47352.toml"
KEPT = "CANNOT TELL"  # the shipped summary's verdict, quoted with its interval
DROPPED = "no interval for these settings"


def _headline(*sets: str) -> str:
    args = ["simulate", EXP]
    for s in sets:
        args += ["--set", s]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split("┏")[0].split())  # the lines above the first table


@pytest.mark.parametrize("neutral", ["description=my run", "calibration.measured_source=my notes",
                                     "vllm.port=8123", "reference.threads=2"])
def test_a_set_that_changes_nothing_computed_keeps_the_interval(neutral):
    head = _headline(neutral)
    assert KEPT in head and DROPPED not in head, head
    assert "not these settings" not in head, head  # the measured delta is at these settings


def test_a_set_of_the_model_drops_it_but_keeps_the_measured_setup():
    head = _headline("acceptance.request_sigma=0.3")
    assert DROPPED in head and KEPT not in head, head
    assert "measured: " in head and "not these settings" not in head, head  # same setup


@pytest.mark.parametrize("changing", ["seed=3", "uncertainty.interval=0.8"])
def test_the_seed_or_a_prior_drops_it(changing):
    head = _headline(changing)
    assert DROPPED in head and KEPT not in head, head


def test_a_setup_change_drops_it_and_says_the_measured_delta_is_elsewhere():
    head = _headline("workload.output_len=1024")
    assert DROPPED in head and "measured at the measured setup, not these settings" in head, head
