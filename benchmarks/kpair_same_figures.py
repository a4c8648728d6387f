"""The k = 1 vs k = 0 pair's ITL and TPOT figures as `vllm bench serve` counts them, measured beside
mtpsim's (one seeded `simulate` run of each row at the experiments' defaults), with the identity
that ties them together.

    python benchmarks/kpair_same_figures.py [ROW_ID ...] [section.key=value ...]

(default rows: the pair; any other expressible row id of docs/data/public/rows.toml may be named)

vLLM 0.33.0's client appends one ITL per streamed message that carries output
(vllm/benchmarks/lib/endpoint_request_func.py, the chat handler ~line 470: one `output.itl.append`
per SSE message with a choice, whatever the number of tokens in it), and the report's TPOT of a
request is (latency - ttft) / (output tokens - 1) (vllm/benchmarks/serve.py ~line 657); the mean
ITL pools every message of every request, the mean TPOT averages requests. Per request the ITLs
add up to latency - ttft = TPOT x (n - 1), so over the run

    mean ITL / mean TPOT = tokens per ITL x w,   tokens per ITL = sum(n - 1) / sum(ITLs),
    w = [sum TPOT_i (n_i - 1) / sum (n_i - 1)] / mean TPOT

w < 1 when short requests have the slow TPOTs (they decode during the burst), w = 1 when TPOT does
not depend on the length. mtpsim knows both factors; a measured row prints only their product.
Nothing here is fitted: the measured rows are printed beside the prediction, not used by it."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROWS = ("gpustack-h200-vllm-tp8-sharegpt", "gpustack-h200-vllm-tp8-mtp1-sharegpt")
FIGURES = ("mean_itl_ms", "median_itl_ms", "p99_itl_ms", "mean_tpot_ms", "median_tpot_ms",
           "p99_tpot_ms", "median_ttft_ms", "output_throughput", "duration")


def decomposition(requests) -> dict[str, float]:
    """Tokens per ITL, the weighting w and their product, from a run's per-request records; plus
    how many ITLs the run holds and the share of the decode time in ITLs over 1 s."""
    n = np.array([r.output_len for r in requests], float)
    tpot = np.array([r.tpot_s if r.tpot_s is not None else np.nan for r in requests])
    itls = np.array([sum(r.itl_count) for r in requests], float)
    ok = (n > 1) & np.isfinite(tpot)
    n, tpot, itls = n[ok], tpot[ok], itls[ok]
    per_itl = float((n - 1).sum() / itls.sum())
    w = float((tpot * (n - 1)).sum() / (n - 1).sum() / tpot.mean())
    gaps = np.concatenate([np.repeat(r.itl_s, r.itl_count) for r in requests if r.itl_count])
    return {"tokens_per_itl": per_itl, "w": w, "itl_over_tpot": per_itl * w,
            "itls": float(gaps.size), "decode_s_in_itls_over_1s": float(gaps[gaps > 1].sum()
                                                                        / gaps.sum())}


def main(argv: list[str]) -> int:
    os.chdir(ROOT)
    from mtpsim.sim.simulator import simulate
    from mtpsim.spec import load_experiment

    rows = {r["id"]: r for r in tomllib.loads(Path("docs/data/public/rows.toml").read_text())["row"]}
    overrides = [a for a in argv if "=" in a]
    print("| row | figure | measured | mtpsim |")
    print("| --- | --- | ---: | ---: |")
    for rid in [a for a in argv if "=" not in a] or ROWS:
        exp = load_experiment(f"experiments/public/{rid}.toml", overrides)
        res = simulate(exp, exp.policies[0] if exp.k else "no_mtp")
        meas = rows[rid]["measured"]
        for key in FIGURES:
            print(f"| {rid} | {key} | {meas[key]:,.1f} | {res.metrics[key]:,.1f} |")
        d = decomposition(res.requests)
        print(f"| {rid} | mean ITL / mean TPOT | {meas['mean_itl_ms'] / meas['mean_tpot_ms']:.3f}"
              f" | {d['itl_over_tpot']:.3f} |")
        print(f"| {rid} | tokens per ITL x w | (product only) | {d['tokens_per_itl']:.3f} x "
              f"{d['w']:.3f} |")
        print(f"| {rid} | ITLs in the run | | {d['itls']:,.0f} |")
        print(f"| {rid} | decode time in ITLs > 1 s | | {100 * d['decode_s_in_itls_over_1s']:.1f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
