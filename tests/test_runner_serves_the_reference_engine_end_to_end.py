"""The runner launches `mtpsim serve-reference` as a subprocess, the client drives it at
concurrency 4, the /metrics deltas equal the engine's own per-request counts, and no server
process is left afterwards."""

from __future__ import annotations

import pytest
from _served import server_pids, tiny_experiment

pytest.importorskip("fastapi")
pytest.importorskip("aiohttp")

from mtpsim.metrics import counters_from_requests  # noqa: E402
from mtpsim.vllm_runner.runner import ServedRun, run_served_policy  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def _max_in_flight(records) -> int:
    events = sorted([(r.arrival_s, 1) for r in records] + [(r.finish_s, -1) for r in records],
                    key=lambda e: (e[0], e[1]))
    best = cur = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def test_metrics_deltas_equal_the_engine_counts_and_nothing_is_left(tmp_path):
    exp = tiny_experiment()
    result, trace = run_served_policy(exp, "share", run=ServedRun("reference", tmp_path))
    assert server_pids(exp.vllm.port) == []
    assert result.mode == "reference" and result.policy == "share"
    assert result.get("completed") == 8 and result.get("failed") == 0
    assert result.get("total_output_tokens") == 8 * 32
    assert _max_in_flight(result.requests) > 1
    own = counters_from_requests(result.requests)  # each request's counts, from the engine
    assert own.num_drafts > 0
    assert own.to_bench_keys() == {k: result.get(k) for k in own.to_bench_keys()}
    assert "seed=1" in result.extra.server_argv
    assert "served run" in trace.meta.note
    # Counted like the vLLM plugin counts: step 0 runs the MTP indexer, steps 1-2 never do.
    assert result.extra.sharing_engaged.startswith("sharing engaged: yes (propose")
    steps = result.extra.plugin_counts["contexts"]["propose"]
    assert steps["indexer"][1:] == [0, 0] and steps["forwards"][1] > 0
    assert (tmp_path / "share.server.log").is_file()


def test_a_server_that_cannot_start_fails_with_its_log_tail(tmp_path):
    exp = tiny_experiment()
    run = ServedRun("reference", tmp_path, weights=str(tmp_path / "missing.safetensors"))
    with pytest.raises(Exception) as e:
        run_served_policy(exp, "fresh", run=run)
    msg = str(e.value)
    assert "exited with code 2 before /health answered" in msg
    assert "--weights" in msg  # serve-reference's own error line, from the log
    assert server_pids(exp.vllm.port) == []
