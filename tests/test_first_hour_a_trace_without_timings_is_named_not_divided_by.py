"""A trace whose every phase is 0 s in every step (a vLLM trace: the plugin times no phase; an
edited run-real trace) ended `simulate --trace` in a ZeroDivisionError traceback from the step
cost fit. It is now one line naming the file; a trace with timings beside it fits as before."""

from __future__ import annotations

import pytest
from _cli import one_error_line
from _synthetic_traces import make_trace

from mtpsim.calibration.fit import fit_traces
from mtpsim.errors import TraceError
from mtpsim.result import PHASES
from mtpsim.trace import Trace


def untimed(trace: Trace, note: str | None = None) -> Trace:
    for st in trace.steps:
        st.phases = dict.fromkeys(PHASES, 0.0)
        st.attention = {}
        st.time_s = 0.0
    trace.meta.phases = note
    return trace


def test_simulate_names_the_trace_without_timings(tmp_path):
    timed, bare = tmp_path / "fresh.trace.jsonl", tmp_path / "zero.trace.jsonl"
    make_trace("fresh", 1, n_requests=12).write(timed)
    bare_trace = untimed(make_trace("share", 2, n_requests=12))
    bare_trace.write(bare)
    n = len(bare_trace.steps)
    line = one_error_line("simulate", "experiments/reference-cpu.toml", "-j", "1", "-p", "fresh",
                          "--trace", str(timed), "--trace", str(bare))
    assert line == (f"error: {bare}: steps: expected phase timings to fit the step cost, got 0 s "
                    f"in every phase of all {n} steps")


def test_a_vllm_trace_says_why_it_has_no_timings():
    traces = [make_trace("fresh", 1, n_requests=12),
              untimed(make_trace("fresh", 3, n_requests=12), "not measured inside vLLM (zeros)")]
    with pytest.raises(TraceError, match=r"^v\.jsonl: steps: expected phase timings .*; the "
                       r"trace says: not measured inside vLLM \(zeros\)$"):
        fit_traces(traces, sources=["a.jsonl", "v.jsonl"])
    fit_traces(traces[:1], sources=["a.jsonl"])  # the timed trace alone still fits
