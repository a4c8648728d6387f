"""acceptance.request_draw: the per-request logit shifts are stratified by default (the workload's
mean shift is exactly 0, as before), i.i.d. normal when opted in (the mean shift of a finite
workload then varies as sigma / sqrt(n)); the prompt and output lengths are the same either way."""

import numpy as np
import pytest
from scipy.special import ndtri

from mtpsim.sim.simulator import draw_requests
from mtpsim.spec import load_experiment

SIGMA, N = 0.5, 64


def _exp(tmp_path, draw=None):
    spec = tmp_path / "e.toml"
    spec.write_text(f'policies = ["fresh"]\n[workload]\nnum_prompts = {N}\ninput_len = 64\n'
                    'output_len = 16\n')
    return load_experiment(str(spec), [] if draw is None else [f'acceptance.request_draw="{draw}"'])


def test_default_is_stratified_normal_quantiles(tmp_path):
    exp = _exp(tmp_path)
    assert exp.acceptance.request_draw == "stratified"
    _, _, shift = draw_requests(exp, np.random.default_rng(3), SIGMA)
    assert np.allclose(np.sort(shift), SIGMA * ndtri((np.arange(N) + 0.5) / N))


def test_independent_keeps_lengths_and_lets_the_workload_mean_shift_vary(tmp_path):
    strat, ind = _exp(tmp_path, "stratified"), _exp(tmp_path, "independent")
    means = []
    for seed in range(400):
        i1, o1, _ = draw_requests(strat, np.random.default_rng(seed), SIGMA)
        i2, o2, s2 = draw_requests(ind, np.random.default_rng(seed), SIGMA)
        assert np.array_equal(i1, i2) and np.array_equal(o1, o2)
        means.append(s2.mean())
    assert np.std(means) == pytest.approx(SIGMA / np.sqrt(N), rel=0.15)


def test_no_spread_draws_no_shift_either_way(tmp_path):
    _, _, shift = draw_requests(_exp(tmp_path, "independent"), np.random.default_rng(0), 0.0)
    assert not shift.any()


def test_bad_value_is_refused(tmp_path):
    with pytest.raises(Exception, match="request_draw"):
        _exp(tmp_path, "iid")
