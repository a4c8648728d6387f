"""vLLM forks its engine core and workers with multiprocessing; a forked child skips `atexit`.
A fake worker forked that way (the real MTPSpeculator hooks, trace mode, no periodic flush)
keeps every count and trace row when it returns or is stopped by SIGTERM (vLLM's handler
raises SystemExit); killed with SIGKILL mid-run, it keeps what it flushed before, and the
runner marks the trace truncated instead of passing it off as complete."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from types import SimpleNamespace

import pytest
from _vllm_fakes import FakeDraftModel, load, make_speculator, propose

from mtpsim.result import Result
from mtpsim.trace import Trace
from mtpsim.vllm_plugin.counts import read_counts
from mtpsim.vllm_plugin.settings import PluginSettings

mtp_mod = pytest.importorskip("vllm.v1.worker.gpu.spec_decode.mtp.speculator")
ROWS_PER_ROUND = 4  # share, k=3, 2 requests: overlap rows at steps 1 and 2 for each


def _worker(folder: str, how: str, ready) -> None:  # the child: a vLLM worker, faked
    import mtpsim.vllm_plugin.patch as patch

    if how == "sigterm":  # vLLM's WorkerProc / EngineCore: SIGTERM -> SystemExit
        signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(SystemExit()))
    rec = patch.install(PluginSettings("share", __import__("pathlib").Path(folder), trace=True))
    mp = pytest.MonkeyPatch()
    spec = make_speculator(mtp_mod.MTPSpeculator, k=3)
    draft = load(spec, mp, FakeDraftModel())
    for _ in range(3):
        propose(spec, draft, [40, 90])
    if how == "sigkill":
        rec.flush()  # a periodic flush; the next two rounds are never flushed
        for _ in range(2):
            propose(spec, draft, [40, 90])
    if how == "return":
        return
    ready.set()
    while True:
        signal.pause()


def _run(tmp_path, monkeypatch, how: str):
    import mtpsim.vllm_plugin.patch as patch

    monkeypatch.setattr(patch, "FLUSH_EVERY_S", 1e9)  # only exit (or explicit) flushes
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    # The parent installs too (vLLM's API server loads the plugin before forking).
    rec = patch.install(PluginSettings("share", tmp_path, trace=True))
    try:
        proc = ctx.Process(target=_worker, args=(str(tmp_path), how, ready))
        proc.start()
        if how != "return":
            assert ready.wait(60)
            os.kill(proc.pid, signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        proc.join(60)
    finally:
        patch.uninstall()
    assert rec._trace_rows == []  # the parent drew nothing
    rows = []
    for path in tmp_path.glob(f"vllm-trace-{proc.pid}.jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    counts = {c.pid: c for c in read_counts(tmp_path)}
    return proc, rows, counts


@pytest.mark.parametrize("how", ["return", "sigterm"])
def test_a_forked_worker_keeps_every_row_when_it_stops_normally(tmp_path, monkeypatch, how):
    from mtpsim.vllm_runner.trace import truncated_processes

    proc, rows, counts = _run(tmp_path, monkeypatch, how)
    assert len(rows) == 3 * ROWS_PER_ROUND
    c = counts[proc.pid]
    assert c.final is True
    assert c.contexts["propose"].forwards == [3, 3, 3]
    assert c.contexts["propose"].shadow == [0, 3, 3]
    assert truncated_processes(tmp_path) == []


def test_a_killed_worker_keeps_its_last_flush_and_the_trace_is_marked_truncated(tmp_path,
                                                                                  monkeypatch):
    from mtpsim.vllm_runner.runner import _vllm_plugin_outputs
    from mtpsim.vllm_runner.trace import truncated_processes

    proc, rows, counts = _run(tmp_path, monkeypatch, "sigkill")
    assert proc.exitcode == -signal.SIGKILL
    assert len(rows) == 3 * ROWS_PER_ROUND  # the two unflushed rounds are lost
    c = counts[proc.pid]
    assert c.final is False and c.contexts["propose"].forwards == [3, 3, 3]
    cut = truncated_processes(tmp_path)
    assert cut == [f"process {proc.pid} was killed: its counts and trace rows stop at its "
                   "last periodic flush"]
    exp = SimpleNamespace(k=3, index_topk=2048)
    result = Result(mode="vllm", policy="share", metrics={})
    trace = _vllm_plugin_outputs(exp, "share", tmp_path, result,
                                 Trace(engine="vllm", policy="share", num_speculative_tokens=3,
                                       index_topk=2048), traced=True)
    assert trace.meta.truncated == cut and result.extra.trace_truncated == cut


def test_a_row_cut_mid_write_is_reported(tmp_path):
    from mtpsim.vllm_runner.trace import read_rows, truncated_processes

    (tmp_path / "vllm-trace-7.jsonl").write_text('{"kind": "verify", "call": 1}\n{"kind": "ov')
    assert len(read_rows(tmp_path)) == 1
    assert truncated_processes(tmp_path) == ["vllm-trace-7.jsonl ends mid-row (the writer was "
                                             "killed while writing)"]
