"""mtpsim.models.gemm_rates: the GEMM time model is fitted to DeepGEMM's published H800 table
only, reproduces it within the errors it states, behaves as physics says, and refuses bad shapes."""

from __future__ import annotations

import numpy as np
import pytest

from mtpsim.models import gemm_rates as gr

H800 = gr.H800


def _errors(fit=gr.FIT, version=gr.FIT_VERSION):
    rows = gr.load_rows(version)
    return gr._predict(fit, rows, H800) / rows["seconds"] - 1


def test_the_recorded_fit_is_what_the_table_gives():
    refit = gr.fit(gr.load_rows())
    assert np.allclose(refit[:4], gr.FIT[:4], rtol=2e-3)
    assert abs(refit[4] - gr.FIT[4]) < 0.05e-6


def test_the_table_is_reproduced_within_the_stated_errors():
    e = _errors()
    assert len(e) == 28
    assert np.max(np.abs(e)) <= gr.LOO["max_abs"]
    assert np.median(np.abs(e)) <= gr.LOO["median_abs"]


def test_the_stated_leave_one_out_errors_are_the_table_s():
    loo = gr.leave_one_out(gr.load_rows())
    assert np.median(np.abs(loo)) == pytest.approx(gr.LOO["median_abs"], abs=2e-3)
    assert np.max(np.abs(loo)) == pytest.approx(gr.LOO["max_abs"], abs=2e-3)
    assert np.sqrt(np.mean(np.log1p(loo) ** 2)) == pytest.approx(gr.LOO["rms_log"], abs=2e-3)


def test_more_work_never_takes_less_time():
    m = np.arange(1, 20000, 7, dtype=float)
    for n, k in ((512, 7168), (7168, 256), (24576, 1536), (2112, 7168)):
        t = gr.gemm_seconds(1.0, m, n, k, *H800)
        assert np.all(np.diff(t) >= 0), (n, k)
        tk = [gr.gemm_seconds(4.0, 256.0, n, kk, *H800) for kk in (128, 256, 512, 7168)]
        assert np.all(np.diff(tk) > 0)
        tg = [gr.gemm_seconds(g, 256.0, n, k, *H800) for g in (1.0, 2.0, 8.0, 64.0)]
        assert np.all(np.diff(tg) > 0)


def test_a_faster_gpu_is_never_slower_and_the_ridge_is_between_max_and_sum():
    base = gr.gemm_seconds(32.0, 256.0, 512, 7168, *H800)
    assert gr.gemm_seconds(32.0, 256.0, 512, 7168, 132, 1979e12, 4.8e12) <= base
    assert gr.gemm_seconds(32.0, 256.0, 512, 7168, 132, 2500e12, 3.35e12) <= base
    tc, tm = np.array([1.0, 2.0, 0.0]), np.array([1.0, 0.5, 3.0])
    b = gr.blend(tc, tm)
    assert np.all(b >= np.maximum(tc, tm)) and np.all(b <= tc + tm)


def test_partial_tiles_and_waves_cost_whole_ones():
    # 64 rows cost a whole 64-row tile; 129 rows two 128-row tiles
    one = gr.compute_seconds(1.0, 1.0, 4096, 7168, *H800[:2])
    assert gr.compute_seconds(1.0, 64.0, 4096, 7168, *H800[:2]) == one
    assert gr.compute_seconds(1.0, 129.0, 4096, 7168, *H800[:2]) == pytest.approx(
        2 * gr.compute_seconds(1.0, 128.0, 4096, 7168, *H800[:2]), rel=0.3)


@pytest.mark.parametrize("bad", [dict(n=0), dict(k=-1), dict(m=float("nan")), dict(groups=0),
                                 dict(m=-3.0)])
def test_bad_shapes_are_refused(bad):
    shape = dict(groups=1.0, m=128.0, n=4096, k=7168) | bad
    with pytest.raises(ValueError, match="gemm_rates"):
        gr.gemm_seconds(shape["groups"], shape["m"], shape["n"], shape["k"], *H800)
