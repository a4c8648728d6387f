"""serve-reference answers a request as vLLM 0.33.0's OpenAI server does: the same status code
and error body shape ({"error": {message, type, param, code}}), 404 for an unknown model, a 400
naming the field for each parameter it cannot honour (vLLM implements them; silently ignoring
them would change the output without a word), and lax typing like vLLM's (`"stream": "false"`
is False). The expected verdicts are checked against vLLM's own request models and
`SamplingParams`: whatever vLLM refuses, this server refuses too."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from _served import tiny_app_client  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

C, H = "/v1/completions", "/v1/chat/completions"
USER = [{"role": "user", "content": "hi"}]
OK = None  # a 200
# (path, body, expected status, expected error param; None for a 200)
CASES = [
    (C, {"prompt": "a", "n": 2}, 400, "n"),
    (C, {"prompt": "a", "n": 0}, 400, "n"),
    (C, {"prompt": "a", "best_of": 2}, 400, "best_of"),
    (C, {"prompt": "a", "logprobs": 1}, 400, "logprobs"),
    (C, {"prompt": "a", "echo": True}, 400, "echo"),
    (H, {"messages": USER, "tools": [{"type": "function", "function": {"name": "f"}}]},
     400, "tools"),
    (H, {"messages": USER, "response_format": {"type": "json_object"}}, 400, "response_format"),
    (H, {"messages": USER, "logprobs": True, "top_logprobs": 2}, 400, "logprobs"),
    (H, {"messages": [{"role": "wizard", "content": "x"}]}, 400, "messages"),
    (H, {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {
        "url": "x"}}]}]}, 400, "messages"),
    (C, {"prompt": "a", "top_p": 1.5}, 400, "top_p"),
    (C, {"prompt": "a", "top_p": 0}, 400, "top_p"),
    (C, {"prompt": "a", "top_p": 0.9}, 400, "top_p"),
    (C, {"prompt": "a", "top_k": -2}, 400, "top_k"),
    (C, {"prompt": "a", "top_k": 5}, 400, "top_k"),
    (C, {"prompt": "a", "presence_penalty": 3}, 400, "presence_penalty"),
    (C, {"prompt": "a", "stop": ["\n"]}, 400, "stop"),
    (C, {"prompt": "a", "temperature": 2.5}, 400, "temperature"),
    (C, {"prompt": "a", "temperature": -1}, 400, "temperature"),
    (C, {"prompt": "a", "max_tokens": 0}, 400, "max_tokens"),
    (C, {"prompt": "a", "stream_options": {"include_usage": True}}, 400, "stream_options"),
    (C, {"prompt": "a", "stream": True, "stream_options": {"continuous_usage_stats": True}},
     400, "stream_options"),
    (C, {"prompt": "a", "stream": "maybe"}, 400, "body.stream"),
    (C, {"prompt": "a", "seed": 2**64}, 400, "body.seed"),
    (C, {"prompt": ["a", "b"]}, 400, "prompt"),
    (C, {"prompt": "a", "model": "gpt-4"}, 404, "model"),
    (H, {"messages": USER, "model": "gpt-4"}, 404, "model"),
    # Accepted: no-op values of unsupported parameters, vLLM's lax types, unknown fields.
    (C, {"prompt": "a", "stream": "false"}, 200, OK),
    (C, {"prompt": "a", "n": 1, "top_p": 1, "top_k": -1, "repetition_penalty": 1.0,
         "logprobs": None, "echo": False, "foo": {"bar": 1}}, 200, OK),
    (C, {"prompt": "a", "model": "ref", "temperature": 0}, 200, OK),
    (H, {"messages": [{"role": "system", "content": [{"type": "text", "text": "hi"}]}],
         "response_format": {"type": "text"}, "tool_choice": "none"}, 200, OK),
]
# the first body key besides the prompt, in the body's own order: a set's order changes with the
# process's hash seed, and pytest-xdist workers must collect the same ids
IDS = [f"{p.rsplit('/', 1)[1]}-{i}-{next((k for k in b if k not in ('prompt', 'messages')), 'messages')}"
       for i, (p, b, _, _) in enumerate(CASES)]


@pytest.fixture(scope="module")
def client():
    with tiny_app_client() as (c, _loop):
        yield c


@pytest.mark.parametrize(("path", "body", "status", "param"), CASES, ids=IDS)
def test_status_and_error_body(client, path, body, status, param):
    r = client.post(path, json={"max_tokens": 2, **body})
    assert r.status_code == status, r.text
    if status == 200:
        assert r.headers["content-type"] == "application/json"  # "stream": "false" is False
        assert r.json()["choices"][0]["finish_reason"] == "length"
        return
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["code"] == status and err["param"] == param and err["message"]
    assert err["type"] == {400: ("BadRequestError", "Bad Request"),
                           404: ("NotFoundError",)}[status][0 if "." not in param else 1]


@pytest.mark.parametrize(("body", "headers"), [
    ('{"prompt": ' + "[" * 100_000 + "]" * 100_000 + "}", {"content-type": "application/json"}),
    ('{"prompt": "a"', {"content-type": "application/json"}),
    ('{"prompt": "a"}', {"content-type": "text/plain"}),
    ("[1, 2]", {"content-type": "application/json"}),
], ids=["deeply-nested", "truncated", "not-json-content-type", "not-an-object"])
def test_malformed_bodies_are_a_400_not_a_500(client, body, headers):
    r = client.post(C, content=body, headers=headers)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == 400


def test_an_error_does_not_echo_a_huge_value_back(client):
    r = client.post(C, json={"prompt": "a", "response_format": {"type": "x" * 1_000_000}})
    assert r.status_code == 400 and r.json()["error"]["param"] == "response_format"
    assert len(r.content) < 1000


def _vllm_refuses(path: str, body: dict) -> bool:
    """vLLM 0.33.0's verdict before its engine sees the request: its pydantic request model,
    then its SamplingParams checks (a 400 either way)."""
    from pydantic import ValidationError
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest
    from vllm.exceptions import VLLMError

    model = CompletionRequest if path == C else ChatCompletionRequest
    try:
        req = model.model_validate(json.loads(json.dumps(body)))
        max_tokens = getattr(req, "max_completion_tokens", None) or req.max_tokens
        req.to_sampling_params(16 if max_tokens is None else max_tokens, {})
    except (ValidationError, VLLMError, ValueError, TypeError):
        return True
    return False


def test_each_refusal_is_vllms_own_or_says_it_is_this_servers(client):
    """A 400 vLLM would also give, or one that says the reference server lacks the feature;
    checked case by case against vLLM's own request models."""
    pytest.importorskip("vllm")
    from mtpsim.serve_reference.protocol import UNSUPPORTED

    wrong = []
    for case_id, (path, body, status, _) in zip(IDS, CASES, strict=True):
        body = {"max_tokens": 2, **body}
        vllm_refuses = _vllm_refuses(path, body)
        r = client.post(path, json=body)
        ours_only = r.status_code == 400 and UNSUPPORTED in r.json()["error"]["message"]
        if r.status_code != status or (r.status_code == 400 and vllm_refuses == ours_only) or (
                r.status_code == 200 and vllm_refuses):
            wrong.append((case_id, r.status_code, vllm_refuses, r.text[:120]))
    assert not wrong


@pytest.mark.parametrize(("path", "raw", "param"), [
    (C, '{"prompt": "\\ud800", "max_tokens": 2}', "prompt"),
    (H, '{"messages": [{"role": "user", "content": "x\\udfff"}], "max_tokens": 2}', "messages")])
def test_a_lone_surrogate_is_a_400_not_a_500(client, path, raw, param):
    """"\\ud800" is valid JSON but no text UTF-8 can encode: the byte-level prompt raised
    UnicodeEncodeError, a 500 in plain text and a traceback in the server's log."""
    r = client.post(path, content=raw.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and "UTF-8" in err["message"]
