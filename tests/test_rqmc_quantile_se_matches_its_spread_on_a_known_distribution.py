"""The randomized-QMC + conditional Monte Carlo quantile (mtpsim.uncertainty.rqmc, what `mtpsim
advise` quotes) lands on a known quantile, and its printed Monte Carlo SE is the spread it shows
over seeds; `adjust_many` (the conditional part) is `adjust`, element by element."""

import math

import numpy as np
import pytest
from scipy.special import ndtri
from scipy.stats import norm

from mtpsim.uncertainty.draws import Z_NAMES, Draw
from mtpsim.uncertainty.rqmc import inner_scores, interval_se, quantile_se, sobol_rows
from mtpsim.uncertainty.summary import Spread, adjust, adjust_many, interval

R, N, M = 16, 16, 32


def _sample(seed: int, iid: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """y = a + 0.6 b + z, a, b, z independent N(0, 1): y ~ N(0, 1.36 + 1). Outer (a, b): a
    scrambled Sobol design per replicate (or independent uniforms); inner z: M scores per point."""
    xs, gs = [], []
    for r in range(R):
        u = (np.random.default_rng(seed * 100 + r).uniform(size=(N, 2)) if iid
             else sobol_rows(2, 0, N, seed * 1000 + r))
        th = ndtri(u)
        z = inner_scores(0, N, M, seed * 1000 + 500 + r)[:, :, 0]
        xs.append(th[:, :1] + 0.6 * th[:, 1:] + z)
        gs.append(np.full(N, r))
    return np.concatenate(xs), np.concatenate(gs)


@pytest.mark.parametrize("iid", [False, True])
def test_the_quantile_is_right_and_its_se_is_its_spread_over_seeds(iid):
    sd = math.sqrt(2.36)
    truth = norm.ppf(0.05) * sd
    got = np.array([quantile_se(*_sample(s, iid), 0.05) for s in range(24)])
    q, se, eff = got[:, 0], got[:, 1], got[:, 2]
    assert np.all(np.abs(q - truth) < 4 * se)  # each seed's end within 4 printed SEs of the truth
    ratio = q.std(ddof=1) / np.median(se)
    assert 0.5 < ratio < 1.6, ratio  # the printed SE is the spread, neither hidden nor inflated
    # effective draws: plain draws for the same SE; plain iid outer draws with conditional inner
    # ones beat plain draws too, QMC more
    assert np.median(eff) > (1500 if not iid else R * N)


def test_qmc_is_tighter_than_independent_draws_and_says_so():
    qmc_se = np.median([quantile_se(*_sample(s), 0.05)[1] for s in range(8)])
    iid_se = np.median([quantile_se(*_sample(s, iid=True), 0.05)[1] for s in range(8)])
    assert qmc_se < 0.7 * iid_se


def test_one_replicate_has_no_se_and_an_interval_reports_its_worse_end():
    x, g = _sample(0)
    assert math.isnan(quantile_se(x, np.zeros(len(x)), 0.05)[1])
    se, eff = interval_se(x, g, 0.9)
    ends = [quantile_se(x, g, p) for p in (0.05, 0.95)]
    assert se == pytest.approx(max(e[1] for e in ends)) and eff == pytest.approx(min(e[2] for e in ends))
    iv = interval(x, None, 0.9, delta=True, half=0.5, groups=g)
    assert iv.mc_se == pytest.approx(se) and iv.eff_draws == pytest.approx(eff)
    assert iv.lo == pytest.approx(np.quantile(x, 0.05)) and iv.p_pos == pytest.approx(np.mean(x > 0))


def test_a_sobol_stage_extends_the_design_without_moving_its_first_rows():
    whole = sobol_rows(5, 0, 16, 3)
    assert np.array_equal(np.vstack([sobol_rows(5, 0, 8, 3), sobol_rows(5, 8, 16, 3)]), whole)
    z = inner_scores(2, 4, 8, 9)
    assert z.shape == (2, 8, 4) and np.array_equal(z, inner_scores(0, 4, 8, 9)[2:])


def test_adjust_many_is_adjust_at_every_draw_and_score():
    rng = np.random.default_rng(1)
    n, m = 5, 7
    al = "spec_decode_acceptance_length"
    keys = ("output_throughput", "median_tpot_ms")
    raw = {"fresh": {"output_throughput": rng.uniform(500, 900, n), "median_tpot_ms": rng.uniform(5, 9, n),
                     al: rng.uniform(1.5, 3, n)},
           "share": {"output_throughput": rng.uniform(500, 900, n), "median_tpot_ms": rng.uniform(5, 9, n),
                     al: rng.uniform(1.4, 3, n)}}
    z = {name: rng.normal(size=(n, m)) for name in Z_NAMES}
    spread = Spread(0.15, 0.11, 0.9, 0.05)
    many = adjust_many(raw, z, spread, "fresh", 3, keys)
    for i in range(n):
        for j in range(m):
            d = Draw(i, 0, {}, {}, {name: float(z[name][i, j]) for name in Z_NAMES})
            one = adjust({p: {k: float(v[i]) for k, v in f.items()} for p, f in raw.items()}, d,
                         spread, "fresh", 3)
            for p in raw:
                for k in keys:
                    assert many[p][k][i, j] == pytest.approx(one[p][k], rel=1e-12)
