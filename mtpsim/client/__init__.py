"""Benchmark client for OpenAI-compatible servers (vLLM, `mtpsim serve-reference`).

`workload` builds the requests (random token ids, or SPEED-Bench `<subset>.jsonl` files),
`request` streams one request (completions or chat) and times its chunks, `prometheus` reads
the `vllm:spec_decode_*` counters, `bench` sends the requests at their intended times with at
most `max_concurrency` in flight and turns the outcome into a `Result`. aiohttp is imported
only when a benchmark runs.
"""
