"""Acceptance depends on the workload: `acceptance.dataset_class` picks a public-sourced prior on
`acceptance.rate_scale` (by temperature), the scale multiplies the conditional rates, and the
acceptance-length interval of a chat or random workload is much wider than the PR's own."""

import numpy as np
import pytest

from mtpsim.models.acceptance import AcceptanceModel
from mtpsim.spec import experiment_from_dict
from mtpsim.uncertainty.draws import drawn_priors
from mtpsim.uncertainty.priors import CLASS_PRIORS, PARAMS, parse_prior
from mtpsim.uncertainty.run import PRIOR, propagate


def _exp(cls: str = "", temperature: float = 1.0, scale: float = 1.0):
    return experiment_from_dict({"acceptance": {"dataset_class": cls, "rate_scale": scale},
                                 "workload": {"temperature": temperature}})


def test_rate_scale_multiplies_the_conditional_rates_and_caps_them():
    base = AcceptanceModel.from_experiment(_exp(), "fresh").conditional
    low = AcceptanceModel.from_experiment(_exp(scale=0.5), "fresh").conditional
    high = AcceptanceModel.from_experiment(_exp(scale=1.5), "fresh").conditional
    assert np.allclose(low, 0.5 * base)
    assert high.max() <= 0.99 and high[0] == pytest.approx(0.99)


def test_the_class_and_temperature_choose_the_prior():
    assert "acceptance_scale" not in drawn_priors(_exp())  # rates of this workload: fixed
    for (cls, greedy), text in CLASS_PRIORS.items():
        p = drawn_priors(_exp(cls, 0.0 if greedy else 1.0))["acceptance_scale"]
        assert p == parse_prior(text, PARAMS["acceptance_scale"])
    # a spec's own prior wins
    e = experiment_from_dict({"acceptance": {"dataset_class": "chat"}, "uncertainty": {
        "priors": {"acceptance_scale": "uniform(0.9, 1.0)"}}})
    assert drawn_priors(e)["acceptance_scale"].text() == "uniform(0.9, 1)"


def test_a_random_workload_has_a_wide_acceptance_interval(tmp_path):
    exp = tmp_path / "e.toml"
    body = ("[engine]\ntp = 8\n[workload]\nnum_prompts = 16\ninput_len = 512\noutput_len = 64\n"
            "max_concurrency = 8\n[acceptance]\nmode = \"expected\"\ndataset_class = \"{}\"\n")
    widths = {}
    for cls in ("", "random"):
        exp.write_text(body.format(cls))
        s = propagate(str(exp), [], 8, jobs=1, condition=False).summary(PRIOR)["metrics"]
        iv = s["fresh"]["spec_decode_acceptance_length"]
        widths[cls] = iv.hi - iv.lo
    # expected-value acceptance: no sampling noise, so fixed rates give (almost) no spread
    assert widths[""] < 0.02 and widths["random"] > 0.3
