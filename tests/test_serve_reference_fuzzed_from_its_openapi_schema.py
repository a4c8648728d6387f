"""Schemathesis against serve-reference, driven by the server's own OpenAPI schema: requests
that fit the schema and requests that break it, on every endpoint. Whatever comes in, the server
answers without a 500, with a status code and body its schema documents (errors in vLLM's
shape), and its engine stays alive. Bounded (a fixed number of cases, printed) and seeded (the
seed is printed; MTPSIM_FUZZ_SEED=N reruns one)."""

from __future__ import annotations

import os
import random
import time

import pytest

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")

from _served import tiny_app_client  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

pytestmark = pytest.mark.slow  # starts servers, clusters or whole processes (conftest)

MAX_EXAMPLES = 100  # every endpoint, schema-fitting and schema-breaking; ~15-30 s on a loaded CPU
SEED = int(os.environ.get("MTPSIM_FUZZ_SEED") or random.randrange(2**32))


def test_no_generated_request_breaks_the_server(capsys):
    from schemathesis.checks import not_a_server_error
    from schemathesis.generation import GenerationMode
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    with tiny_app_client(raise_server_exceptions=False) as (client, loop):
        schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
        operations = [r.ok() for r in schema.get_all_operations()]
        strategies = [op.as_strategy(generation_mode=mode) for op in operations
                      for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)]
        calls: dict[int, int] = {}
        spent = [0.0]

        @seed(SEED)
        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.one_of(strategies))
        def fuzz(case) -> None:
            t0 = time.perf_counter()
            response = case.call_and_validate(checks=[
                not_a_server_error, status_code_conformance, content_type_conformance,
                response_schema_conformance])
            calls[response.status_code] = calls.get(response.status_code, 0) + 1
            spent[0] += time.perf_counter() - t0
            assert loop.alive, "the engine died"

        with capsys.disabled():
            print(f"\nschemathesis on serve-reference: seed {SEED} "
                  f"(MTPSIM_FUZZ_SEED={SEED} reruns it), {len(operations)} operations")
        try:
            fuzz()
        except BaseException:
            with capsys.disabled():
                print(f"schemathesis failed with seed {SEED}")
            raise
        with capsys.disabled():
            print(f"schemathesis: {sum(calls.values())} generated requests, status codes "
                  f"{dict(sorted(calls.items()))}, {spent[0]:.1f} s in requests")
    assert {200, 400} <= set(calls), calls  # both accepted and refused requests were made


VALID_EXAMPLES = 20
_valid_completion = st.fixed_dictionaries(
    {"prompt": st.one_of(st.text(min_size=1, max_size=40).filter(lambda t: t.strip("\0")),
                         st.lists(st.integers(1, 255), min_size=1, max_size=40)),
     "max_tokens": st.integers(1, 8)},
    optional={"temperature": st.one_of(st.none(), st.floats(0, 2)),
              "seed": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
              "stream": st.booleans(), "ignore_eos": st.booleans(),
              "model": st.sampled_from([None, "ref"]), "n": st.just(1),
              "top_p": st.sampled_from([None, 1, 1.0])})


def test_valid_requests_are_served_whole(capsys):
    """Requests within what the server supports (generated, streaming or not) all succeed, and
    the usage they report matches what was asked and what was streamed."""
    import json

    with tiny_app_client() as (client, loop):
        made = [0]

        @seed(SEED)
        @settings(max_examples=VALID_EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(_valid_completion, st.booleans())
        def fuzz(body, usage) -> None:
            if body.get("stream") and usage:
                body["stream_options"] = {"include_usage": True}
            made[0] += 1
            r = client.post("/v1/completions", json=body)
            assert r.status_code == 200, (body, r.text)
            if body.get("stream"):
                events = [json.loads(x[6:]) for x in r.text.splitlines()
                          if x.startswith("data: {")]
                assert r.text.rstrip().endswith("data: [DONE]")
                assert events[-1 - bool(usage)]["choices"][0]["finish_reason"] in ("length", "stop")
                done = events[-1]["usage"]["completion_tokens"] if usage else None
            else:
                done = r.json()["usage"]["completion_tokens"]
                assert r.json()["choices"][0]["finish_reason"] in ("length", "stop")
            if done is not None:
                assert 1 <= done <= body["max_tokens"]
                if body.get("ignore_eos"):
                    assert done == body["max_tokens"]
            assert loop.alive

        try:
            fuzz()
        except BaseException:
            with capsys.disabled():
                print(f"\nvalid-request fuzz failed with seed {SEED} (MTPSIM_FUZZ_SEED={SEED})")
            raise
        with capsys.disabled():
            print(f"\nvalid-request fuzz on serve-reference: {made[0]} generated requests, "
                  f"seed {SEED}")
