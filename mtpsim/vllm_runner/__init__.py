"""Real mode through a server: launch `vllm serve` (or `mtpsim serve-reference`) for one
policy, drive it with the benchmark client, scrape `/metrics`, stop it, write the Result.

`argv` builds the command lines (lists, never shell strings), `process` owns the server's
process group, `runner` runs one policy and is what `mtpsim run-real --engine vllm` and
`--engine reference --server` call.
"""
