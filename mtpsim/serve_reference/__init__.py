"""`mtpsim serve-reference`: an OpenAI-compatible HTTP server (FastAPI + uvicorn, both
installed with vLLM's requirements, imported only here) over the reference engine.

The engine runs in one thread (`EngineLoop`), continuously batching whatever requests are
live; HTTP handlers hand requests to it and stream its outputs back. `/metrics` carries the
`vllm:spec_decode_*` counters in vLLM 0.33.0's format, so the same benchmark client and
runner measure this server and `vllm serve`. Tokens are bytes (the reference model's
vocabulary): prompt text is UTF-8 encoded, output bytes are decoded incrementally.
"""
