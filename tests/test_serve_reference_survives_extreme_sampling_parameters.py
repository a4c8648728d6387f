"""A request's sampling parameters cannot kill the reference server's engine: a temperature
so small that logits / T overflows is raised to vLLM's floor (1e-2, below 1e-5 greedy), and
non-finite numbers (JSON NaN / Infinity) are a 400, as every other bad request."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from _served import tiny_app_client  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)


@pytest.fixture(scope="module")
def served():
    with tiny_app_client(raise_server_exceptions=False) as (client, loop):
        yield client, loop


def _post(client, temperature: str, max_tokens: str = "4"):
    body = f'{{"prompt": [5, 6, 7], "max_tokens": {max_tokens}, "temperature": {temperature}}}'
    return client.post("/v1/completions", content=body,
                       headers={"content-type": "application/json"})


@pytest.mark.parametrize("temperature", ["1e-300", "1e-6", "0.001"])
def test_tiny_temperatures_sample_without_killing_the_engine(served, temperature):
    client, loop = served
    r = _post(client, temperature)
    assert r.status_code == 200, r.text
    assert loop.alive and client.get("/health").status_code == 200


@pytest.mark.parametrize(("temperature", "max_tokens", "needle"), [
    ("NaN", "4", "temperature"), ("Infinity", "4", "temperature"),
    ("1.0", "Infinity", "max_tokens"), ("1.0", "NaN", "max_tokens"),
])
def test_non_finite_numbers_are_a_400(served, temperature, max_tokens, needle):
    client, loop = served
    r = _post(client, temperature, max_tokens)
    assert r.status_code == 400
    assert needle in r.json()["error"]["message"]
    assert loop.alive
