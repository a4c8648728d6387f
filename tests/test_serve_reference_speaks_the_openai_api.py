"""`mtpsim serve-reference`'s HTTP layer over a real (tiny, random-init) engine: completions
and chat, streaming and not, usage and per-request counters, /metrics, and one clear 400 for
bad requests."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from _served import tiny_app_client  # noqa: E402

from mtpsim.client.prometheus import parse_spec_decode  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


@pytest.fixture(scope="module")
def client():
    with tiny_app_client() as (c, _loop):
        yield c


def _events(resp) -> list[dict]:
    out = []
    for line in resp.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def test_streamed_completion_reports_usage_and_its_own_counters(client):
    before = parse_spec_decode(client.get("/metrics").text)
    body = {"model": "ref", "prompt": [5, 6, 7, 8], "max_tokens": 20, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True}, "seed": 3}
    with client.stream("POST", "/v1/completions", json=body) as resp:
        assert resp.status_code == 200
        events = _events(resp)
    chunks, final = events[:-1], events[-1]
    assert all(len(e["choices"]) == 1 for e in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert final["usage"] == {"prompt_tokens": 4, "completion_tokens": 20, "total_tokens": 24}
    delta = parse_spec_decode(client.get("/metrics").text).delta(before)
    own = final["spec_decode"]
    assert own["num_drafts"] > 0
    assert (delta.num_drafts, delta.num_accepted_tokens, delta.accepted_per_pos) == (
        own["num_drafts"], own["num_accepted_tokens"], own["accepted_per_pos"])


def test_chat_without_streaming_returns_one_message(client):
    r = client.post("/v1/chat/completions", json={
        "model": "ref", "messages": [{"role": "user", "content": "def f(x):"}],
        "max_completion_tokens": 6, "ignore_eos": True, "temperature": 0})
    assert r.status_code == 200
    msg = r.json()
    assert msg["object"] == "chat.completion"
    assert msg["choices"][0]["message"]["role"] == "assistant"
    assert msg["usage"]["completion_tokens"] == 6
    assert msg["usage"]["prompt_tokens"] == len(b"def f(x):\n")


def test_streamed_chat_opens_with_the_role_chunk(client):
    body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 3,
            "ignore_eos": True, "stream": True}
    with client.stream("POST", "/v1/chat/completions", json=body) as resp:
        events = _events(resp)
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all("usage" not in e for e in events)  # not asked for


@pytest.mark.parametrize(("path", "body", "needle"), [
    ("/v1/completions", {"prompt": [1] * 120, "max_tokens": 20}, "max_model_len"),
    ("/v1/completions", {"prompt": [1, 999]}, "prompt_tokens"),
    ("/v1/completions", {"prompt": {"x": 1}}, "body.prompt: Input should be"),
    ("/v1/completions", {"prompt": "a", "max_tokens": "many"}, "max_tokens"),
    ("/v1/chat/completions", {"messages": "hi"}, "body.messages: Input should be"),
    ("/v1/completions", {"prompt": "a", "stream": True, "stream_options": [1]}, "stream_options"),
])
def test_bad_requests_get_a_400_naming_the_problem(client, path, body, needle):
    r = client.post(path, json=body)
    assert r.status_code == 400
    assert needle in r.json()["error"]["message"]


def test_health_and_models(client):
    assert client.get("/health").status_code == 200
    assert client.get("/v1/models").json()["data"][0]["id"] == "ref"


@pytest.mark.parametrize(("policy", "engaged"), [("share", True), ("fresh", False)])
def test_indexer_counts_tell_whether_sharing_engaged(policy, engaged):
    from mtpsim.vllm_plugin.counts import PluginCounts, sharing_verdict

    with tiny_app_client(policy) as (c, _loop):
        for _ in range(2):
            assert c.post("/v1/completions", json={"prompt": "abc", "max_tokens": 12,
                                                   "ignore_eos": True}).status_code == 200
        counts = PluginCounts.from_json(c.get("/mtpsim/indexer_counts").json())
    steps = counts.contexts["propose"]
    assert len(steps.forwards) == 3 and steps.forwards[0] == steps.indexer[0] > 0
    assert steps.indexer[1:] == ([0, 0] if engaged else steps.forwards[1:])
    assert sharing_verdict(counts).engaged is engaged
