"""`--bench-client vllm`: vLLM 0.33.0's own `vllm bench serve` drives `mtpsim serve-reference`
through the runner; vLLM reads the server's /metrics as mtpsim does and its --save-result JSON
becomes the Result."""

from __future__ import annotations

import urllib.request

import pytest
from _served import server_pids, tiny_experiment

pytest.importorskip("vllm.benchmarks.serve")
pytest.importorskip("fastapi")

from mtpsim.client.prometheus import parse_spec_decode  # noqa: E402
from mtpsim.vllm_runner.runner import ServedRun, run_served_policy, vllm_bench_load  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


def test_vllm_bench_reads_the_same_counters_as_mtpsim(tmp_path):
    exp = tiny_experiment(num_prompts=6, input_len=40, output_len=24)
    run = ServedRun("reference", tmp_path, bench_client="vllm")
    scraped = []

    def load(base_url: str):
        def scrape():
            with urllib.request.urlopen(base_url + "/metrics", timeout=5) as r:
                return parse_spec_decode(r.read().decode())

        before = scrape()
        result = vllm_bench_load(exp, run, "share")(base_url)
        scraped.append(scrape().delta(before))
        return result

    result, _ = run_served_policy(exp, "share", run=run, load=load)
    assert server_pids(exp.vllm.port) == []
    assert result.mode == "reference" and result.extra.bench_client == "vllm bench serve"
    assert result.get("completed") == 6 and result.get("total_output_tokens") == 6 * 24
    mine = scraped[0].to_bench_keys()
    assert mine["spec_decode_num_drafts"] > 0
    for key in ("spec_decode_num_drafts", "spec_decode_draft_tokens",
                "spec_decode_accepted_tokens"):
        assert result.get(key) == mine[key]
    assert result.get("spec_decode_acceptance_length") == pytest.approx(
        mine["spec_decode_acceptance_length"])
    assert result.get("spec_decode_per_position_acceptance_rates") == pytest.approx(
        mine["spec_decode_per_position_acceptance_rates"])
