"""The calibration measures its step cost's workload-shift error by leaving each workload kind
(experiment file) out: on synthetic traces of two kinds whose steps cost a known factor apart,
the fitted shift SD is that factor's log; with one kind it says so and carries the stated prior."""

import dataclasses
import math

import pytest
from _synthetic_traces import make_trace

from mtpsim.calibration.fit import fit_traces
from mtpsim.calibration.schema import calibration_from_json
from mtpsim.calibration.shift import MEASURED, PRIOR, PRIORED, trace_kind

FACTOR = 1.25


def kind(tr, name: str, factor: float = 1.0, decode_only: bool = False):
    """`tr` run from experiment `name`, its steps (or only its decode-only steps) `factor` x as dear."""
    for st in tr.steps:
        if decode_only and st.num_prefills:
            continue
        st.phases = {p: v * factor for p, v in st.phases.items()}
        st.attention = {p: v * factor for p, v in st.attention.items()}
    tr.meta = dataclasses.replace(tr.meta, experiment=f"experiments/cal/{name}.toml")
    return tr


def test_two_kinds_a_known_factor_apart_give_its_log_as_the_shift_sd():
    traces = [kind(make_trace("fresh", 1, n_requests=60, conc=6), "stream"),
              kind(make_trace("share", 2, n_requests=60, conc=6), "stream"),
              kind(make_trace("fresh", 3, n_requests=60, conc=3), "burst", FACTOR),
              kind(make_trace("share", 4, n_requests=60, conc=3), "burst", FACTOR)]
    cal = fit_traces(traces)
    s = cal.workload_shift
    assert s.source == MEASURED and set(s.kinds) == {"stream", "burst"}
    # fitted on the stream, the burst costs FACTOR x the price, and the stream 1 / FACTOR x the
    # burst's: both log ratios are +-log FACTOR, so their RMS is log FACTOR
    assert s.kinds["burst"]["decode"] == pytest.approx(FACTOR, rel=1e-3)
    assert s.kinds["stream"]["prefill"] == pytest.approx(1 / FACTOR, rel=1e-3)
    assert s.decode_sd == pytest.approx(math.log(FACTOR), rel=1e-3)
    assert s.prefill_sd == pytest.approx(math.log(FACTOR), rel=1e-3)
    assert [src["kind"] for src in cal.sources] == ["stream", "stream", "burst", "burst"]
    back = calibration_from_json(cal.to_json())
    assert back.workload_shift == s


def test_a_shift_of_decode_steps_only_shows_in_the_decode_sd():
    traces = [kind(make_trace("fresh", 1, n_requests=60), "stream"),
              kind(make_trace("fresh", 3, n_requests=60), "burst", 1.4, decode_only=True)]
    s = fit_traces(traces).workload_shift
    assert s.kinds["burst"]["decode"] == pytest.approx(1.4, rel=0.02)
    assert s.decode_sd > 3 * s.prefill_sd


def test_one_kind_says_so_and_carries_the_stated_prior():
    traces = [kind(make_trace("fresh", 1, n_requests=40), "calibrate"),
              kind(make_trace("share", 2, n_requests=40), "calibrate")]
    s = fit_traces(traces).workload_shift
    assert s.source == PRIORED and (s.decode_sd, s.prefill_sd) == (PRIOR.decode_sd, PRIOR.prefill_sd)
    assert "one workload kind (calibrate)" in s.note and "v12" in s.note


def test_a_kind_whose_rest_has_no_fresh_trace_is_not_left_out():
    traces = [kind(make_trace("fresh", 1, n_requests=40), "a"),
              kind(make_trace("share", 2, n_requests=40), "b")]
    s = fit_traces(traces).workload_shift  # leaving "a" out leaves no fresh trace to fit
    assert s.source == PRIORED and "without a fresh trace in the rest: a" in s.note


def test_a_trace_without_an_experiment_is_of_kind_unknown():
    assert trace_kind(make_trace("fresh", 1, n_requests=4)) == "unknown"
