"""mtpsim counts ITL and TPOT as `vllm bench serve` does (vllm/benchmarks/lib/endpoint_request_func.py:
one ITL per streamed message that carries output; serve.py: TPOT = (latency - ttft) / (n - 1)).
Under MTP a step streams its 1 + A tokens as one message, so one ITL covers several tokens, and a
request's ITLs add up to TPOT x (n - 1); over a run, mean ITL / mean TPOT = tokens per ITL x w
(benchmarks/kpair_same_figures.py), which is how the public k = 1 vs k = 0 pair is read."""

import sys
from pathlib import Path

import pytest

from mtpsim.sim.simulator import simulate
from mtpsim.spec import experiment_from_dict

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from kpair_same_figures import decomposition  # noqa: E402

BASE = {"model": {"preset": "deepseek-v3.2", "quantization": "nvfp4"},
        "hardware": {"preset": "b200"}, "engine": {"tp": 4},
        "workload": {"num_prompts": 24, "input_len": 1024, "output_len": 64,
                     "max_concurrency": 8}}


def _run(k: int):
    exp = experiment_from_dict({**BASE, "speculative": {"num_speculative_tokens": k}})
    return simulate(exp, exp.policies[0])


@pytest.mark.parametrize("k", [0, 1, 3])
def test_a_requests_itls_add_up_to_its_tpot_times_its_tokens_after_the_first(k):
    for r in _run(k).requests:
        decode_s = sum(g * c for g, c in zip(r.itl_s, r.itl_count, strict=True))
        assert decode_s == pytest.approx(r.tpot_s * (r.output_len - 1), rel=1e-9)
        assert 1 <= sum(r.itl_count) <= r.output_len - 1  # one ITL per streamed chunk


@pytest.mark.parametrize("k", [1, 3])
def test_one_itl_carries_the_steps_1_plus_a_tokens(k):
    res = _run(k)
    d = decomposition(res.requests)
    length = res.metrics["spec_decode_acceptance_length"]
    # every chunk but a request's last (cut at its length) carries 1 + A tokens
    assert 1.0 < d["tokens_per_itl"] <= length * 1.001
    assert d["tokens_per_itl"] == pytest.approx(length, rel=0.1)


def test_plain_decoding_streams_one_token_per_itl():
    assert decomposition(_run(0).requests)["tokens_per_itl"] == 1.0


@pytest.mark.parametrize("k", [0, 1])
def test_mean_itl_over_mean_tpot_is_tokens_per_itl_times_the_length_weighting(k):
    res = _run(k)
    d = decomposition(res.requests)
    assert res.metrics["mean_itl_ms"] / res.metrics["mean_tpot_ms"] == pytest.approx(
        d["tokens_per_itl"] * d["w"], rel=1e-9)
